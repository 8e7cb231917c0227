// Measured data: SEG-Y files written and read back (formats, scalars, units,
// damaged files), the 3D-to-2D line-source correction against the exact 2D
// and 3D Green's functions, band-limited resampling with time shifts, and the
// checks that tie a data file to a survey.

#include <gtest/gtest.h>

#include <segyio/segy.h>

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fftw3.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/field_data.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/segy.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

std::string temp_path(const std::string& name) { return test::scratch_path(name).string(); }

/// Two shots, uneven receiver counts, positions on a millimetre raster.
Survey two_shot_survey() {
    Survey s;
    s.dt = 1.0e-10;
    s.nt = 300;
    s.shots.push_back({{{{0.25, 1.5}, 1.0}}, {{3.0, 0.5}, {3.0, 1.25}, {3.0, 2.0}}, {}});
    s.shots.push_back({{{{0.25, 2.75}, 1.0}}, {{3.0, 0.75}, {3.0, 3.125}}, {}});
    return s;
}

double ricker(double t, double f) {
    const double a = kPi * f * t;
    return (1 - 2 * a * a) * std::exp(-a * a);
}

TEST(Segy, WrittenFileReadsBackWithItsGeometryAndTimeAxis) {
    const Survey s = two_shot_survey();
    const Traces t = test::random_traces(s, 7);
    const std::string path = temp_path("round.sgy");
    write_segy(path, s, t, "a test file");
    const TraceData d = read_segy(path);
    EXPECT_EQ(d.survey.dt, s.dt);  // the rev 2 extended interval is exact
    EXPECT_EQ(d.survey.nt, s.nt + 1);
    EXPECT_EQ(d.t0, 0.0);
    ASSERT_EQ(d.survey.shots.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        const Shot& a = s.shots[i];
        const Shot& b = d.survey.shots[i];
        EXPECT_NEAR(b.sources.at(0).position.x, a.sources[0].position.x, 1e-12);
        EXPECT_NEAR(b.sources.at(0).position.z, a.sources[0].position.z, 1e-12);
        ASSERT_EQ(b.receivers.size(), a.receivers.size());
        for (std::size_t r = 0; r < a.receivers.size(); ++r) {
            EXPECT_NEAR(b.receivers[r].x, a.receivers[r].x, 1e-12);
            EXPECT_NEAR(b.receivers[r].z, a.receivers[r].z, 1e-12);
            EXPECT_EQ(d.traces[i](static_cast<int>(r), 0), 0.0);  // t = 0
            for (int n = 0; n < s.nt; ++n)
                ASSERT_EQ(d.traces[i](static_cast<int>(r), n + 1), static_cast<float>(t[i](static_cast<int>(r), n)));
        }
    }
    // geometry only: the same shots, no samples
    const TraceData g = read_segy(path, {}, false);
    EXPECT_EQ(g.survey.shots.size(), 2u);
    EXPECT_TRUE(g.traces.empty());
    // onto gprfwi's own axis: the identity, to float rounding
    ObservedSpec spec;
    spec.file = path;
    spec.format = DataFormat::segy;
    const Traces back = read_observed(spec, s, {0, 1});
    EXPECT_LT(test::relative_difference(back, t), 1e-7);
}

/// Writes a SEG-Y file with segyio directly: format, scalars and units chosen by the test.
void write_foreign(const std::string& path, int format, int interval, std::int16_t coord_scalar, int measurement,
                   const std::vector<std::vector<double>>& traces, const std::vector<std::array<std::int32_t, 4>>& xyz) {
    const int ns = static_cast<int>(traces[0].size());
    segy_file* f = segy_open(path.c_str(), "w+b");
    ASSERT_NE(f, nullptr);
    std::string text(3200, ' ');
    segy_write_textheader(f, 0, text.c_str());
    std::array<char, 400> bin{};
    segy_set_bfield(bin.data(), SEGY_BIN_INTERVAL, interval);
    segy_set_bfield(bin.data(), SEGY_BIN_SAMPLES, ns);
    segy_set_bfield(bin.data(), SEGY_BIN_FORMAT, format);
    segy_set_bfield(bin.data(), SEGY_BIN_MEASUREMENT_SYSTEM, measurement);
    segy_write_binheader(f, bin.data());
    segy_set_format(f, format);
    const int bsize = segy_trsize(format, ns);
    for (std::size_t i = 0; i < traces.size(); ++i) {
        std::array<char, 240> h{};
        segy_set_field(h.data(), SEGY_TR_FIELD_RECORD, xyz[i][0]);  // record
        segy_set_field(h.data(), SEGY_TR_SOURCE_GROUP_SCALAR, coord_scalar);
        segy_set_field(h.data(), SEGY_TR_ELEV_SCALAR, coord_scalar);
        segy_set_field(h.data(), SEGY_TR_SOURCE_X, xyz[i][1]);
        segy_set_field(h.data(), SEGY_TR_GROUP_X, xyz[i][2]);
        segy_set_field(h.data(), SEGY_TR_RECV_GROUP_ELEV, xyz[i][3]);
        segy_set_field(h.data(), SEGY_TR_SOURCE_SURF_ELEV, 5);  // source z = -5 * scalar
        segy_set_field(h.data(), SEGY_TR_SAMPLE_COUNT, ns);
        segy_write_traceheader(f, static_cast<int>(i), h.data(), 3600, bsize);
        std::vector<char> buf(static_cast<std::size_t>(bsize));
        for (int k = 0; k < ns; ++k) {
            const double v = traces[i][static_cast<std::size_t>(k)];
            char* at = buf.data() + static_cast<std::size_t>(k) * static_cast<std::size_t>(bsize / ns);
            if (format == SEGY_IBM_FLOAT_4_BYTE) {
                const float x = static_cast<float>(v);
                std::memcpy(at, &x, 4);
            } else {
                const auto x = static_cast<std::int16_t>(v);
                std::memcpy(at, &x, 2);
            }
        }
        segy_from_native(format, ns, buf.data());
        segy_writetrace(f, static_cast<int>(i), buf.data(), 3600, bsize);
    }
    segy_close(f);
}

TEST(Segy, ReadsIbmFloatAndIntegerFilesWithScalarsUnitsAndRecords) {
    const std::vector<std::vector<double>> traces{{0.5, -1.25, 3.0, 0.0}, {1.0, 2.0, -4.0, 0.125}, {-0.5, 0, 0, 8}};
    // records 7, 7, 9; coordinate scalar +10 (multiply); feet
    const std::vector<std::array<std::int32_t, 4>> xyz{{7, 1, 20, -3}, {7, 1, 30, -4}, {9, 2, 20, -3}};
    const std::string ibm = temp_path("ibm.sgy");
    write_foreign(ibm, SEGY_IBM_FLOAT_4_BYTE, 250, 10, 2, traces, xyz);
    SegyReadOptions ps;
    ps.interval_unit_s = 1e-12;
    const TraceData d = read_segy(ibm, ps);
    EXPECT_DOUBLE_EQ(d.survey.dt, 250e-12);
    ASSERT_EQ(d.survey.shots.size(), 2u);
    EXPECT_EQ(d.survey.shots[0].receivers.size(), 2u);
    const double ft = 0.3048;
    EXPECT_NEAR(d.survey.shots[0].sources[0].position.x, 10 * ft, 1e-12);
    EXPECT_NEAR(d.survey.shots[0].sources[0].position.z, -50 * ft, 1e-12);
    EXPECT_NEAR(d.survey.shots[0].receivers[1].x, 300 * ft, 1e-12);
    EXPECT_NEAR(d.survey.shots[0].receivers[1].z, 40 * ft, 1e-12);
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(d.traces[0](1, k), traces[1][static_cast<std::size_t>(k)]);  // exact in IBM float
        EXPECT_EQ(d.traces[1](0, k), traces[2][static_cast<std::size_t>(k)]);
    }
    EXPECT_DOUBLE_EQ(read_segy(ibm).survey.dt, 250e-6);  // the standard's microseconds by default
    SegyReadOptions fixed;
    fixed.sample_interval_s = 3e-11;
    EXPECT_EQ(read_segy(ibm, fixed).survey.dt, 3e-11);

    const std::string i16 = temp_path("int16.sgy");
    write_foreign(i16, SEGY_SIGNED_SHORT_2_BYTE, 100, -100, 1, {{1, -2, 300, 4}, {5, 6, 7, -32768}}, {{1, 0, 0, 0}, {1, 0, 100, 0}});
    const TraceData e = read_segy(i16);
    ASSERT_EQ(e.survey.shots.size(), 1u);
    EXPECT_EQ(e.traces[0](0, 2), 300.0);
    EXPECT_EQ(e.traces[0](1, 3), -32768.0);
    EXPECT_NEAR(e.survey.shots[0].receivers[1].x, 1.0, 1e-12);
}

TEST(Segy, DamagedFilesAreReportedByName) {
    const std::string path = temp_path("damaged.sgy");
    write_segy(path, two_shot_survey(), test::random_traces(two_shot_survey(), 1), "");
    const auto expect_error = [&](const std::string& file, const std::string& text) {
        try {
            read_segy(file);
            ADD_FAILURE() << "no error for " << file;
        } catch (const Error& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(file), std::string::npos) << msg;
            EXPECT_NE(msg.find(text), std::string::npos) << msg;
        }
    };
    expect_error(temp_path("absent.sgy"), "no such file");
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
    expect_error(path, "not a whole number of traces");
    std::filesystem::resize_file(path, 1000);
    expect_error(path, "shorter than the SEG-Y file headers");
    {
        std::ofstream junk(temp_path("junk.sgy"), std::ios::binary);
        junk << std::string(4000, '\x7f');
    }
    expect_error(temp_path("junk.sgy"), "sample format code");
}

/// Exact 2D Green's function response, e^{+iwt} convention: U = W * (-i/4) H0^(2)(w r / v).
std::vector<double> exact_2d(const std::vector<double>& w, double dt, double r, double v) {
    const int n = static_cast<int>(w.size());
    std::vector<double> x(w);
    std::vector<std::complex<double>> X(static_cast<std::size_t>(n / 2 + 1));
    fftw_plan p = fftw_plan_dft_r2c_1d(n, x.data(), reinterpret_cast<fftw_complex*>(X.data()), FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
    X[0] = 0;
    for (std::size_t k = 1; k < X.size(); ++k) {
        const double kr = 2 * kPi * static_cast<double>(k) / (n * dt) * r / v;
        const std::complex<double> h2(std::cyl_bessel_j(0.0, kr), -std::cyl_neumann(0.0, kr));
        X[k] *= std::complex<double>(0, -0.25) * h2;
    }
    X.back() = 0;
    fftw_plan q = fftw_plan_dft_c2r_1d(n, reinterpret_cast<fftw_complex*>(X.data()), x.data(), FFTW_ESTIMATE);
    fftw_execute(q);
    fftw_destroy_plan(q);
    for (double& s : x) s /= n;
    return x;
}

double relative_l2(const std::vector<double>& a, const std::vector<double>& b) {
    double d = 0, n = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d += (a[i] - b[i]) * (a[i] - b[i]);
        n += b[i] * b[i];
    }
    return std::sqrt(d / n);
}

/// Misfit after the best amplitude scaling of a onto b (what a wavelet estimate could absorb).
double scaled_l2(const std::vector<double>& a, const std::vector<double>& b) {
    double ab = 0, aa = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        ab += a[i] * b[i];
        aa += a[i] * a[i];
    }
    std::vector<double> s(a);
    for (double& v : s) v *= ab / aa;
    return relative_l2(s, b);
}

TEST(LineSource, PointSourceDataBecomeTheExactLineSourceResponse) {
    // Homogeneous lossless medium, 100 MHz Ricker, 5 m offset: kr = 31 at the peak frequency.
    const double dt = 5e-11, v = 1.0e8, r = 5.0, f = 1.0e8;
    const int n = 4096;
    std::vector<double> w(n), g3(n);
    for (int i = 0; i < n; ++i) {
        const double t = i * dt;
        w[static_cast<std::size_t>(i)] = ricker(t - 20e-9, f);
        g3[static_cast<std::size_t>(i)] = ricker(t - 20e-9 - r / v, f) / (4 * kPi * r);  // w * delta(t - r/v) / (4 pi r)
    }
    const std::vector<double> g2 = exact_2d(w, dt, r, v);
    std::vector<double> corrected(g3);
    line_source_correction(corrected.data(), n, dt, r, v, LineSource::to_2d);
    // The correction is the far-field ratio of the two Green's functions: its
    // error is the O(1/(8 k r)) term of the Hankel asymptote, 0.4% at the peak
    // frequency and more below it.
    const double corrected_error = relative_l2(corrected, g2);
    const double raw_error = scaled_l2(g3, g2);
    EXPECT_LT(corrected_error, 0.02) << "corrected " << corrected_error;
    EXPECT_GT(raw_error, 0.3) << "even scaled, point-source data are not 2D data: " << raw_error;
    // And back: the two are inverse filters, up to what the record cannot
    // hold. Their impulse responses decay like t^-1/2 and t^-3/2, and the
    // corrected trace is cut at the record's end, where it is still 5e-5 of
    // its peak; the round trip (either order) agrees to 1.4e-5.
    double peak = 0;
    for (double c : corrected) peak = std::max(peak, std::abs(c));
    EXPECT_LT(std::abs(corrected.back()) / peak, 1e-4);
    std::vector<double> back(corrected);
    line_source_correction(back.data(), n, dt, r, v, LineSource::to_3d);
    EXPECT_LT(relative_l2(back, g3), 5e-5);
    std::vector<double> other(g3);
    line_source_correction(other.data(), n, dt, r, v, LineSource::to_3d);
    line_source_correction(other.data(), n, dt, r, v, LineSource::to_2d);
    EXPECT_LT(relative_l2(other, g3), 5e-5);
    EXPECT_THROW(line_source_correction(back.data(), n, dt, 0.0, v, LineSource::to_2d), InvalidArgument);
}

TEST(Resample, BandLimitedSignalsMoveBetweenAxesAndShiftInTime) {
    const double f = 3.0e8;
    const auto signal = [&](double t) { return std::exp(-std::pow((t - 6e-9) / 1.5e-9, 2)) * std::sin(2 * kPi * f * t); };
    const double dt_in = 1.0e-10;
    const int n_in = 200;
    std::vector<double> x(n_in);
    for (int k = 0; k < n_in; ++k) x[static_cast<std::size_t>(k)] = signal(k * dt_in);
    for (const double dt_out : {0.37e-10, 1.0e-10, 2.3e-10}) {
        const double shift = 0.77e-9;
        const int n_out = static_cast<int>(15e-9 / dt_out);
        const auto y = resample_trace(x.data(), n_in, dt_in, 0.0, n_out, dt_out, dt_out + shift);
        double worst = 0;
        for (int m = 0; m < n_out; ++m) worst = std::max(worst, std::abs(y[static_cast<std::size_t>(m)] - signal((m + 1) * dt_out + shift)));
        EXPECT_LT(worst, 2e-4) << "dt_out " << dt_out;
    }
    // the same axis: the identity, exactly
    const auto same = resample_trace(x.data(), n_in, dt_in, 0.0, n_in, dt_in, 0.0);
    for (int k = 0; k < n_in; ++k) EXPECT_EQ(same[static_cast<std::size_t>(k)], x[static_cast<std::size_t>(k)]);
}

TEST(Observed, FileAndSurveyMustDescribeTheSameAcquisition) {
    const Survey s = two_shot_survey();
    const std::string path = temp_path("check.sgy");
    write_segy(path, s, test::random_traces(s, 3), "");
    ObservedSpec spec;
    spec.file = path;
    spec.format = DataFormat::segy;
    const auto expect_error = [&](const ObservedSpec& o, const Survey& survey, const std::string& text) {
        try {
            read_observed(o, survey, {0, 1});
            ADD_FAILURE() << "no error: " << text;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        }
    };
    Survey moved = s;
    moved.shots[1].receivers[1].z += 0.01;
    expect_error(spec, moved, "shot 1 receiver 1 is at (3, 3.125) m in the file (model coordinates), (3, 3.135) m");
    Survey fewer = s;
    fewer.shots[0].receivers.pop_back();
    expect_error(spec, fewer, "shot 0 has 3 receivers in the file, 2 in the survey");
    Survey longer = s;
    longer.nt = s.nt + 1;
    expect_error(spec, longer, "past the record's end");
    ObservedSpec zeros = spec;
    zeros.time_zero_s = {1e-9, 2e-9, 3e-9};
    expect_error(zeros, s, "3 time-zero values for 2 shots");
    // an origin moves the file's positions into the model
    Survey shifted = s;
    for (Shot& shot : shifted.shots) {
        for (Source& src : shot.sources) src.position.x -= 0.25;
        for (Position& p : shot.receivers) p.x -= 0.25;
    }
    ObservedSpec origin = spec;
    origin.origin = {0.25, 0.0};
    EXPECT_NO_THROW(read_observed(origin, shifted, {0, 1}));
    expect_error(origin, s, "shot 0 source is at (0, 1.5) m in the file");
    // a shift by whole samples moves samples: time zero 3 dt (and the record
    // then ends 3 samples earlier)
    ObservedSpec late = spec;
    late.time_zero_s = {3 * s.dt};
    expect_error(late, s, "after a time zero of 3e-10 s reach 3.03e-08 s, past the record's end at 3e-08 s");
    Survey shorter = s;
    shorter.nt = s.nt - 3;
    const Traces t = read_observed(spec, s, {1});
    const Traces u = read_observed(late, shorter, {1});
    for (int n = 0; n < shorter.nt; ++n) ASSERT_NEAR(u[0](1, n), t[0](1, n + 3), 1e-12);
}

}  // namespace
}  // namespace gprfwi
