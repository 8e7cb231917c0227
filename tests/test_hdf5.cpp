// HDF5 trace files: written to a temporary name and renamed, in the layout of
// docs/hdf5.md, and read back (checked against the survey) unchanged.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "gprfwi/error.hpp"
#include "gprfwi/files.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

Survey uneven_survey() {
    const Grid g{30, 20, 0.05, 0.05};
    Survey s = test::random_survey(g, 3, 2, 4, 50, 3e8, 1e-10, 1);
    s.shots[1].receivers.resize(2);  // shots with different receiver counts
    s.shots[2].sources.resize(1);
    return s;
}

TEST(Hdf5Traces, RoundTripWithUnevenShots) {
    const Survey s = uneven_survey();
    const Traces t = test::random_traces(s, 4);
    const auto path = test::scratch_path("round_trip.h5").string();
    write_traces_h5(path, s, t, "grid: {nx: 30}");
    const Traces back = read_traces_h5(path, s);
    for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(back[i].samples(), t[i].samples()) << "shot " << i;

    // the layout: [n_shots][widest receiver count][nt], NaN padding, counts, attributes
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t set = H5Dopen2(f, "/traces", H5P_DEFAULT), space = H5Dget_space(set);
    hsize_t dims[3];
    H5Sget_simple_extent_dims(space, dims, nullptr);
    EXPECT_EQ(dims[0], 3u);
    EXPECT_EQ(dims[1], 4u);
    EXPECT_EQ(dims[2], 50u);
    std::vector<double> data(dims[0] * dims[1] * dims[2]);
    H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
    EXPECT_TRUE(std::isnan(data[(1 * 4 + 3) * 50]));  // shot 1 has 2 receivers
    EXPECT_EQ(data[(1 * 4 + 1) * 50 + 7], t[1](1, 7));
    int counts[3];
    const hid_t rc = H5Dopen2(f, "/receiver_count", H5P_DEFAULT);
    H5Dread(rc, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, counts);
    EXPECT_EQ(counts[0], 4);
    EXPECT_EQ(counts[1], 2);
    for (const char* name : {"dt", "units", "time_convention", "gprfwi_version", "config"})
        EXPECT_GT(H5Aexists(f, name), 0) << name;
    H5Dclose(rc);
    H5Sclose(space);
    H5Dclose(set);
    H5Fclose(f);
    for (const auto& e : std::filesystem::directory_iterator(test::scratch_path("")))
        EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << "temporary file left: " << e.path();
}

// A writer killed before its rename leaves NAME.tmp-PID beside the whole
// file it was replacing; a campaign's start removes such files of processes
// that no longer run, and only those.
TEST(Files, StaleTemporariesOfDeadWritersAreRemoved) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);  // its pid now runs nothing
    const std::filesystem::path dir = test::scratch_path("stale");
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "models");
    auto touch = [](const std::filesystem::path& p) { std::ofstream(p) << "partial"; };
    const std::string dead = std::to_string(child), alive = std::to_string(::getpid());
    touch(dir / ("checkpoint.h5.tmp-" + dead));
    touch(dir / "models" / ("01_low_003.h5.tmp-" + dead));
    touch(dir / ("history.csv.tmp-" + alive));  // a writer of this process, still at work
    touch(dir / "notes.tmp-draft");            // not a writer's name
    touch(dir / "checkpoint.h5");
    const std::vector<std::string> removed = remove_stale_temporaries(dir.string());
    EXPECT_EQ(removed.size(), 2u);
    EXPECT_FALSE(std::filesystem::exists(dir / ("checkpoint.h5.tmp-" + dead)));
    EXPECT_FALSE(std::filesystem::exists(dir / "models" / ("01_low_003.h5.tmp-" + dead)));
    EXPECT_TRUE(std::filesystem::exists(dir / ("history.csv.tmp-" + alive)));
    EXPECT_TRUE(std::filesystem::exists(dir / "notes.tmp-draft"));
    EXPECT_TRUE(std::filesystem::exists(dir / "checkpoint.h5"));
    EXPECT_TRUE(remove_stale_temporaries((dir / "absent").string()).empty());
    std::filesystem::remove_all(dir);
}

// A file that does not fit (here a file-size limit, as a quota or a full
// disk) is refused before HDF5 writes it, with the file named; the file it
// was to replace stays as it was, and no temporary file is left.
TEST(Files, AModelThatDoesNotFitLeavesThePreviousOne) {
    const std::string path = test::scratch_path("limited.h5").string();
    const Model small = Model::uniform(Grid{10, 10, 0.1, 0.1}, 5.0, 0.001);
    write_model_h5(path, small, "first");
    const auto before = std::filesystem::file_size(path);
    const Model large = Model::uniform(Grid{100, 100, 0.1, 0.1}, 5.0, 0.001);  // 240 kB of arrays
    rlimit old{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit tight = old;
    tight.rlim_cur = 100 << 10;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tight), 0);
    std::string message;
    try {
        write_model_h5(path, large, "second");
    } catch (const Error& e) {
        message = e.what();
    }
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
    std::signal(SIGXFSZ, old_handler);
    EXPECT_NE(message.find(path + ": no room"), std::string::npos) << message;
    EXPECT_EQ(std::filesystem::file_size(path), before);
    EXPECT_EQ(read_model_h5(path, small.grid).eps_r(3, 3), 5.0);
    for (const auto& e : std::filesystem::directory_iterator(test::scratch_path("")))
        EXPECT_EQ(e.path().string().find("limited.h5.tmp-"), std::string::npos) << "temporary file left: " << e.path();
    write_model_h5(path, large, "third");  // with room again, HDF5 writes as before
    EXPECT_EQ(read_model_h5(path, large.grid).eps_r(50, 50), 5.0);
}

TEST(Hdf5Traces, MismatchesAreReportedWithTheFile) {
    Survey s = uneven_survey();
    const auto path = test::scratch_path("mismatch.h5").string();
    write_traces_h5(path, s, test::random_traces(s, 5), "");
    Survey longer = s;
    longer.nt = 60;
    for (auto& shot : longer.shots) shot.wavelet.resize(60);
    try {
        read_traces_h5(path, longer);
        FAIL();
    } catch (const SizeMismatch& e) {
        EXPECT_NE(std::string(e.what()).find(path + ": /traces is [3][4][50], the survey needs [3][4][60]"), std::string::npos)
            << e.what();
    }
    Survey other_dt = s;
    other_dt.dt *= 2;
    EXPECT_THROW(read_traces_h5(path, other_dt), SizeMismatch);
    EXPECT_THROW(read_traces_h5(test::scratch_path("missing.h5").string(), s), Error);
    Traces wrong = test::random_traces(s, 6);
    wrong.pop_back();
    EXPECT_THROW(write_traces_h5(test::scratch_path("wrong.h5").string(), s, wrong, ""), SizeMismatch);
    EXPECT_FALSE(std::filesystem::exists(test::scratch_path("wrong.h5")));
}

TEST(Hdf5Gradient, WritesTheArraysTheMisfitAndAnXdmfSidecar) {
    const Grid g{7, 5, 0.1, 0.2};
    Array2D ge(5, 7), gs(5, 7);
    for (int iz = 0; iz < 5; ++iz)
        for (int ix = 0; ix < 7; ++ix) {
            ge(iz, ix) = iz * 10 + ix;
            gs(iz, ix) = -0.5 * ix;
        }
    const auto path = test::scratch_path("gradient.h5").string();
    write_gradient_h5(path, g, 12.5, ge, gs, "cfg");
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    std::vector<double> back(35);
    const hid_t set = H5Dopen2(f, "/grad_eps_r", H5P_DEFAULT);
    H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data());
    EXPECT_EQ(back, ge.values());
    double misfit = 0;
    const hid_t attr = H5Aopen(f, "misfit", H5P_DEFAULT);
    H5Aread(attr, H5T_NATIVE_DOUBLE, &misfit);
    EXPECT_EQ(misfit, 12.5);
    H5Aclose(attr);
    H5Dclose(set);
    H5Fclose(f);
    std::ifstream xdmf(test::scratch_path("gradient.xdmf"));
    const std::string text((std::istreambuf_iterator<char>(xdmf)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("gradient.h5:/grad_sigma"), std::string::npos);
    EXPECT_NE(text.find("Dimensions=\"5 7\""), std::string::npos);
    EXPECT_THROW(write_gradient_h5(test::scratch_path("bad.h5").string(), Grid{8, 5, 0.1, 0.2}, 0, ge, gs, ""), SizeMismatch);
}

// Every file records the run file as an attribute; a run file listing every
// receiver (8 shots x 512 receivers, 135 KB) exceeds the 64 KiB an HDF5
// object header holds, which failed the write at the end of the computation.
// Files use dense attribute storage: any size is written and read back.
TEST(Hdf5Model, RecordsRunFilesOfAnySize) {
    std::string config = "survey:\n  shots:\n";
    for (int s = 0; s < 8; ++s) {
        config += "    - sources: [[0.5, 0.5]]\n      receivers: [";
        for (int r = 0; r < 512; ++r) config += (r ? ", " : "") + std::string("[3.1234567, ") + std::to_string(0.01 * r) + "]";
        config += "]\n";
    }
    ASSERT_GT(config.size(), 90u * 1024);  // (well over the 64 KiB limit)
    const Model m = Model::uniform(Grid{12, 9, 0.1, 0.1}, 5.0, 0.002);
    const auto path = test::scratch_path("large-config.h5").string();
    ModelFileExtras extra;
    extra.texts["history"] = config;  // (a checkpoint's history grows the same way)
    write_model_h5(path, m, config, extra);
    ModelFileExtras back;
    back.texts["history"] = "";
    const Model r = read_model_h5(path, m.grid, &back);
    EXPECT_EQ(r.eps_r.values(), m.eps_r.values());
    EXPECT_EQ(back.texts["history"], config);
    std::filesystem::remove(path);
    std::filesystem::remove(std::filesystem::path(path).replace_extension(".xdmf"));
}

// Regressions of what fuzzing found (docs/reliability.md): files that are
// valid HDF5 but hostile or incomplete are refused as input errors, before
// anything is allocated from their declared shapes.

/// A file with a float64 dataset of shape `dims`; chunked and never written
/// (its few bytes declare all of it) unless `values` fill it.
void write_dataset_file(const std::string& path, const char* name, const std::vector<hsize_t>& dims,
                        const std::vector<double>* values = nullptr, double dt = 1e-10) {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
    std::vector<hsize_t> chunk(dims.size(), 1);
    H5Pset_chunk(create, static_cast<int>(chunk.size()), chunk.data());
    const hid_t set = H5Dcreate2(file, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, create, H5P_DEFAULT);
    if (values) H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values->data());
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t attr = H5Acreate2(file, "dt", H5T_IEEE_F64LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_DOUBLE, &dt);
    H5Aclose(attr);
    H5Sclose(scalar);
    H5Dclose(set);
    H5Pclose(create);
    H5Sclose(space);
    H5Fclose(file);
}

std::string input_error_message(const std::function<void()>& read) {
    try {
        read();
    } catch (const std::exception& e) {
        EXPECT_TRUE(is_input_error(e)) << "not an input error: " << e.what();
        return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
}

TEST(Hdf5Hostile, AVastShapeWithNothingStoredIsRefusedBeforeItIsAllocated) {
    const auto path = test::scratch_path("vast.h5").string();
    write_dataset_file(path, "/wavelet", {hsize_t{1} << 40});  // 8 TiB declared, a few KiB of file
    const std::string what = input_error_message([&] { read_vector_h5(path, "wavelet", 1e-10); });
    EXPECT_NE(what.find("declares 8.796e+12 bytes of values, the file stores 0"), std::string::npos) << what;
    // the same shape written in full is read (a small one: this is the check's other side)
    const std::vector<double> values(100, 0.5);
    write_dataset_file(path, "/wavelet", {100}, &values);
    EXPECT_EQ(read_vector_h5(path, "wavelet", 1e-10), values);
}

TEST(Hdf5Hostile, TracesGeometryOfTheWrongShapeOrCountsIsRefused) {
    Survey s = uneven_survey();
    const auto good = test::scratch_path("geometry.h5").string();
    write_traces_h5(good, s, test::random_traces(s, 7), "");
    ASSERT_NO_THROW(read_trace_data_h5(good));
    // receiver positions [shots][n][1] instead of [shots][n][2]: was read out of bounds
    const auto bad = test::scratch_path("geometry-bad.h5").string();
    std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
    {
        const hid_t file = H5Fopen(bad.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        H5Ldelete(file, "/receiver_positions", H5P_DEFAULT);
        const std::vector<hsize_t> dims{3, 4, 1};
        const std::vector<double> zeros(12, 0.0);
        const hid_t space = H5Screate_simple(3, dims.data(), nullptr);
        const hid_t set = H5Dcreate2(file, "/receiver_positions", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data());
        H5Dclose(set);
        H5Sclose(space);
        H5Fclose(file);
    }
    EXPECT_NE(input_error_message([&] { read_trace_data_h5(bad); }).find("/receiver_positions has shape [3, 4, 1]"),
              std::string::npos);
    // a receiver count out of range (stored as int32, as gprfwi writes it): was converted to a size
    // undefined when negative, and read past the positions when too large
    for (double count : {-1.0, std::nan(""), 99.0}) {
        std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
        const hid_t file = H5Fopen(bad.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        const hid_t set = H5Dopen2(file, "/receiver_count", H5P_DEFAULT);
        std::vector<double> counts(3);
        H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, counts.data());
        counts[1] = count;
        H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, counts.data());
        H5Dclose(set);
        H5Fclose(file);
        const std::string what = input_error_message([&] { read_trace_data_h5(bad); });
        EXPECT_NE(what.find("/receiver_count[1] is"), std::string::npos) << count << ": " << what;
    }
}

TEST(Hdf5Hostile, ANanSampleIntervalDoesNotPassForTheRunsOne) {
    const auto path = test::scratch_path("nan-dt.h5").string();
    const std::vector<double> values(10, 1.0);
    write_dataset_file(path, "/wavelet", {10}, &values);
    {
        const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        const hid_t set = H5Dopen2(file, "/wavelet", H5P_DEFAULT);
        const hid_t scalar = H5Screate(H5S_SCALAR);
        const hid_t attr = H5Acreate2(set, "dt", H5T_IEEE_F64LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
        const double nan = std::nan("");
        H5Awrite(attr, H5T_NATIVE_DOUBLE, &nan);
        H5Aclose(attr);
        H5Sclose(scalar);
        H5Dclose(set);
        H5Fclose(file);
    }
    EXPECT_THROW(read_vector_h5(path, "wavelet", 1e-10), SizeMismatch);
}

TEST(Hdf5Hostile, FailuresOfHdf5WhileReadingAreInputErrors) {
    const auto path = test::scratch_path("no-traces.h5").string();
    const std::vector<double> values(10, 1.0);
    write_dataset_file(path, "/wavelet", {10}, &values);
    EXPECT_NE(input_error_message([&] { read_trace_data_h5(path); }).find("no dataset /traces"), std::string::npos);
}

}  // namespace
}  // namespace gprfwi
