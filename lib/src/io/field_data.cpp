#include "gprfwi/field_data.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <filesystem>

#include <fmt/format.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/fft.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/point_weights.hpp"

namespace gprfwi {

namespace {

constexpr int kRadius = 8;           // resampling filter half-width, in samples of the coarser axis
constexpr double kBeta = 8.0;        // its Kaiser window
constexpr double kPositionTolerance = 1e-3;  // m: SEG-Y stores millimetres

double distance(const Position& a, const Position& b) { return std::hypot(a.x - b.x, a.z - b.z); }

}  // namespace

DataFormat data_format_of(const std::string& path) {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext == ".h5" || ext == ".hdf5") return DataFormat::hdf5;
    if (ext == ".sgy" || ext == ".segy") return DataFormat::segy;
    throw InvalidArgument(fmt::format("{}: cannot tell the format from the extension '{}' (.h5/.hdf5 or .sgy/.segy)", path, ext));
}

std::string ObservedSpec::describe() const {
    std::string s = fmt::format("{} ({})", file, format == DataFormat::hdf5 ? "HDF5" : "SEG-Y");
    if (origin.x != 0 || origin.z != 0) s += fmt::format(", origin ({}, {}) m", origin.x, origin.z);
    if (!time_zero_s.empty())
        s += time_zero_s.size() == 1 ? fmt::format(", time zero {:.4g} s", time_zero_s[0])
                                     : fmt::format(", time zero per shot ({} values)", time_zero_s.size());
    if (line_source != LineSource::none)
        s += fmt::format(", line-source correction {} at {:.4g} m/s", line_source == LineSource::to_2d ? "3D->2D" : "2D->3D",
                         line_source_velocity);
    return s;
}

TraceData read_trace_file(const ObservedSpec& spec, bool samples) {
    TraceData d = spec.format == DataFormat::segy ? read_segy(spec.file, spec.segy, samples) : read_trace_data_h5(spec.file);
    for (Shot& shot : d.survey.shots) {
        for (Source& s : shot.sources) s.position = {s.position.x - spec.origin.x, s.position.z - spec.origin.z};
        for (Position& p : shot.receivers) p = {p.x - spec.origin.x, p.z - spec.origin.z};
    }
    return d;
}

void line_source_correction(double* trace, int n, double dt, double r, double velocity, LineSource direction) {
    if (direction == LineSource::none || n <= 0) return;
    if (!(r > 0) || !(velocity > 0) || !(dt > 0))
        throw InvalidArgument(fmt::format("line-source correction: distance {} m, velocity {} m/s and dt {} s must be > 0",
                                          r, velocity, dt));
    const int nfft = fft_length(2 * n);
    std::vector<std::complex<double>> X = real_spectrum(trace, n, nfft);
    // FFTW's forward transform has e^{-i w t}: fields go as e^{+i w t}, outgoing
    // waves as e^{-i k r}; then G2D / G3D = sqrt(2 pi r v / w) e^{-i pi / 4}.
    const std::complex<double> phase = std::polar(1.0, direction == LineSource::to_2d ? -kPi / 4 : kPi / 4);
    X.front() = 0.0;
    X.back() = 0.0;  // Nyquist: a real bin cannot carry the phase
    for (std::size_t k = 1; k + 1 < X.size(); ++k) {
        const double w = 2.0 * kPi * static_cast<double>(k) / (nfft * dt);
        const double gain = std::sqrt(2.0 * kPi * r * velocity / w);
        X[k] *= (direction == LineSource::to_2d ? gain : 1.0 / gain) * phase;
    }
    const std::vector<double> x = real_signal(std::move(X), nfft);
    for (int i = 0; i < n; ++i) trace[i] = x[static_cast<std::size_t>(i)] / nfft;
}

std::vector<double> resample_trace(const double* x, int n_in, double dt_in, double t_in0, int n_out, double dt_out,
                                   double t_out0) {
    if (!(dt_in > 0) || !(dt_out > 0)) throw InvalidArgument("resample_trace: sample intervals must be > 0");
    const double coarse = std::max(dt_in, dt_out);  // filter samples: u = tau / coarse
    const double reach = kRadius * coarse;
    const double gain = dt_in / coarse;  // 1 when up-sampling; the filter's DC gain when down-sampling
    std::vector<double> out(static_cast<std::size_t>(std::max(n_out, 0)), 0.0);
    for (int m = 0; m < n_out; ++m) {
        const double t = t_out0 + m * dt_out;
        const double k_mid = (t - t_in0) / dt_in;
        const int lo = std::max(0, static_cast<int>(std::ceil(k_mid - reach / dt_in)));
        const int hi = std::min(n_in - 1, static_cast<int>(std::floor(k_mid + reach / dt_in)));
        double sum = 0;
        for (int k = lo; k <= hi; ++k) {
            const double u = (t - (t_in0 + k * dt_in)) / coarse;
            const double nearest = std::round(u);
            const double w = std::abs(u - nearest) < 1e-9 ? (nearest == 0.0 ? 1.0 : 0.0) : windowed_sinc(u, kRadius, kBeta);
            sum += w * x[k];
        }
        out[static_cast<std::size_t>(m)] = sum * gain;
    }
    return out;
}

TraceData prepare_traces(const TraceData& data, const ObservedSpec& spec, double dt, int nt) {
    const std::size_t shots = data.survey.shots.size();
    if (spec.time_zero_s.size() > 1 && spec.time_zero_s.size() != shots)
        throw InvalidArgument(fmt::format("{}: {} time-zero values for {} shots (give one, or one per shot)", spec.file,
                                          spec.time_zero_s.size(), shots));
    const double file_end = data.t0 + (data.survey.nt - 1) * data.survey.dt;
    for (std::size_t s = 0; s < (spec.time_zero_s.empty() ? 0 : shots); ++s) {
        const double t0 = spec.time_zero_s[spec.time_zero_s.size() == 1 ? 0 : s];
        if (nt * dt + t0 > file_end + 1e-6 * dt)
            throw InvalidArgument(fmt::format("{}: shot {}: {} samples of {:.6g} s after a time zero of {:.6g} s reach "
                                              "{:.6g} s, past the record's end at {:.6g} s", spec.file, s, nt, dt, t0,
                                              nt * dt + t0, file_end));
    }
    if (spec.time_zero_s.empty() && nt * dt > file_end + 1e-6 * dt)
        throw InvalidArgument(fmt::format("{}: {} samples of {:.6g} s reach {:.6g} s, past the record's end at {:.6g} s",
                                          spec.file, nt, dt, nt * dt, file_end));
    TraceData out;
    out.survey.dt = dt;
    out.survey.nt = nt;
    out.t0 = dt;
    out.summary = data.summary;
    std::vector<double> work(static_cast<std::size_t>(data.survey.nt));
    for (std::size_t s = 0; s < shots; ++s) {
        const Shot& shot = data.survey.shots[s];
        out.survey.shots.push_back({shot.sources, shot.receivers, {}});
        const double t0 = spec.time_zero_s.empty() ? 0.0 : spec.time_zero_s[spec.time_zero_s.size() == 1 ? 0 : s];
        const int n_rec = static_cast<int>(shot.receivers.size());
        ShotTraces& t = out.traces.emplace_back(n_rec, nt);
        for (int r = 0; r < n_rec; ++r) {
            std::copy_n(data.traces.at(s).receiver(r), data.survey.nt, work.begin());
            if (spec.line_source != LineSource::none) {
                if (shot.sources.empty()) throw InputFileError(fmt::format("{}: shot {} has no source position", spec.file, s));
                const double d = distance(shot.sources.front().position, shot.receivers[static_cast<std::size_t>(r)]);
                if (d < kPositionTolerance)
                    throw InputFileError(fmt::format("{}: shot {} receiver {} is at its source; the line-source correction needs "
                                            "a source-receiver distance", spec.file, s, r));
                line_source_correction(work.data(), data.survey.nt, data.survey.dt, d, spec.line_source_velocity,
                                       spec.line_source);
            }
            const auto y = resample_trace(work.data(), data.survey.nt, data.survey.dt, data.t0, nt, dt, dt + t0);
            std::copy(y.begin(), y.end(), t.receiver(r));
        }
    }
    return out;
}

Traces read_observed(const ObservedSpec& spec, const Survey& survey, const std::vector<std::size_t>& shots) {
    if (spec.as_is()) return read_traces_h5(spec.file, survey, shots);
    const TraceData file = read_trace_file(spec, true);
    if (file.survey.shots.size() != survey.shots.size())
        throw SizeMismatch(fmt::format("{}: {} shots in the file, {} in the survey", spec.file, file.survey.shots.size(),
                                       survey.shots.size()));
    if (spec.time_zero_s.size() > 1 && spec.time_zero_s.size() != survey.shots.size())
        throw SizeMismatch(fmt::format("{}: {} time-zero values for {} shots (give one, or one per shot)", spec.file,
                                       spec.time_zero_s.size(), survey.shots.size()));
    TraceData wanted;
    wanted.survey.dt = file.survey.dt;
    wanted.survey.nt = file.survey.nt;
    wanted.t0 = file.t0;
    ObservedSpec per_shot = spec;
    per_shot.time_zero_s.clear();
    for (std::size_t s : shots) {
        const Shot& f = file.survey.shots.at(s);
        const Shot& want = survey.shots.at(s);
        if (f.receivers.size() != want.receivers.size())
            throw SizeMismatch(fmt::format("{}: shot {} has {} receivers in the file, {} in the survey", spec.file, s,
                                           f.receivers.size(), want.receivers.size()));
        if (!f.sources.empty() && !want.sources.empty() &&
            distance(f.sources.front().position, want.sources.front().position) > kPositionTolerance)
            throw SizeMismatch(fmt::format("{}: shot {} source is at ({}, {}) m in the file (model coordinates), ({}, {}) m "
                                           "in the survey", spec.file, s, f.sources.front().position.x,
                                           f.sources.front().position.z, want.sources.front().position.x,
                                           want.sources.front().position.z));
        for (std::size_t r = 0; r < f.receivers.size(); ++r)
            if (distance(f.receivers[r], want.receivers[r]) > kPositionTolerance)
                throw SizeMismatch(fmt::format("{}: shot {} receiver {} is at ({}, {}) m in the file (model coordinates), "
                                               "({}, {}) m in the survey", spec.file, s, r, f.receivers[r].x,
                                               f.receivers[r].z, want.receivers[r].x, want.receivers[r].z));
        wanted.survey.shots.push_back(f);
        wanted.traces.push_back(file.traces.at(s));
        if (!spec.time_zero_s.empty()) per_shot.time_zero_s.push_back(spec.time_zero_s[spec.time_zero_s.size() == 1 ? 0 : s]);
    }
    return prepare_traces(wanted, per_shot, survey.dt, survey.nt).traces;
}

}  // namespace gprfwi
