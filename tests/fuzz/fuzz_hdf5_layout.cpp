// Fuzz target: HDF5 files that are valid HDF5 but not what gprfwi wrote.
// libhdf5 itself is not instrumented, so mutating the bytes of a file
// (fuzz_hdf5) mostly ends at its header checks; here the input instead
// describes a file: which of the datasets the readers look for exist, their
// rank, shape (small and filled from the input, or vast and left to the fill
// value, as a few bytes of a hostile file can declare), element type (float,
// integer, string) and values (NaN, infinities and subnormals included), and
// the root attributes (dt, dx, dz) as numbers, strings or absent. The
// readers then read it as a model, a traces file and a wavelet.

#include <fuzzer/FuzzedDataProvider.h>
#include <hdf5.h>

#include <array>
#include <cstring>
#include <vector>

#include "fuzz_support.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/hdf5_io.hpp"

namespace {

hid_t element_type(int kind) {
    switch (kind) {
        case 0: return H5T_IEEE_F64LE;
        case 1: return H5T_IEEE_F32LE;
        case 2: return H5T_STD_I32LE;
        default: return H5T_STD_U8LE;
    }
}

void add_dataset(hid_t file, const char* name, FuzzedDataProvider& in) {
    const int rank = in.ConsumeIntegralInRange(0, 3);
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    double count = 1;
    for (hsize_t& d : dims) {
        d = in.ConsumeBool() ? in.ConsumeIntegralInRange<hsize_t>(0, 12) : in.ConsumeIntegralInRange<hsize_t>(0, hsize_t{1} << 40);
        count *= static_cast<double>(d);
    }
    if (count > 1e15) return;  // beyond what HDF5 lets a dataset declare
    const hid_t type = element_type(in.ConsumeIntegralInRange(0, 3));
    const hid_t space = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims.data(), nullptr);
    const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
    const bool small = count <= 4096;
    if (!small) {  // chunked and never written: the file stays small, reads give the fill value
        std::vector<hsize_t> chunk(dims.size());
        for (std::size_t i = 0; i < dims.size(); ++i) chunk[i] = std::max<hsize_t>(1, std::min<hsize_t>(dims[i], 16));
        H5Pset_chunk(create, rank, chunk.data());
    }
    const hid_t set = H5Dcreate2(file, name, type, space, H5P_DEFAULT, create, H5P_DEFAULT);
    if (set >= 0 && small && count > 0) {
        const std::size_t bytes = static_cast<std::size_t>(count) * H5Tget_size(type);
        std::vector<std::uint8_t> values = in.ConsumeBytes<std::uint8_t>(bytes);
        values.resize(bytes, 0);
        H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    }
    if (set >= 0) H5Dclose(set);
    H5Pclose(create);
    H5Sclose(space);
}

void add_attribute(hid_t file, const char* name, FuzzedDataProvider& in) {
    const int kind = in.ConsumeIntegralInRange(0, 2);
    if (kind == 0) return;  // absent
    const hid_t space = H5Screate(H5S_SCALAR);
    if (kind == 1) {
        std::array<std::uint8_t, 8> raw{};
        const auto bytes = in.ConsumeBytes<std::uint8_t>(8);
        std::copy(bytes.begin(), bytes.end(), raw.begin());
        double v;
        std::memcpy(&v, raw.data(), 8);
        const hid_t a = H5Acreate2(file, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
        if (a >= 0) H5Awrite(a, H5T_NATIVE_DOUBLE, &v), H5Aclose(a);
    } else {
        const std::string text = in.ConsumeRandomLengthString(16) + " ";
        const hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, text.size());
        const hid_t a = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
        if (a >= 0) H5Awrite(a, type, text.data()), H5Aclose(a);
        H5Tclose(type);
    }
    H5Sclose(space);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace gprfwi;
    FuzzedDataProvider in(data, size);
    const std::string path = fuzz::scratch_dir() + "/layout.h5";
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) std::abort();
    for (const char* name : {"/eps_r", "/sigma", "/mu_r", "/traces", "/receiver_positions", "/source_positions",
                             "/receiver_count", "/source_count", "/wavelet"})
        if (in.ConsumeBool()) add_dataset(file, name, in);
    for (const char* name : {"dt", "dx", "dz"}) add_attribute(file, name, in);
    H5Fclose(file);

    const Grid grid{12, 10, 0.05, 0.05};
    fuzz::judge("read_model_h5", [&] { read_model_h5(path, grid); });
    fuzz::judge("read_trace_data_h5", [&] { read_trace_data_h5(path); });
    static const Survey survey = [] {
        Survey s;
        s.dt = 1e-10;
        s.nt = 8;
        for (int k = 0; k < 2; ++k) {
            Shot shot;
            shot.sources.push_back({{0.1, 0.1}, 1.0});
            shot.receivers = {{0.2, 0.3}, {0.3, 0.3}};
            shot.wavelet.assign(8, 0.0);
            s.shots.push_back(shot);
        }
        return s;
    }();
    fuzz::judge("read_traces_h5", [&] { read_traces_h5(path, survey); });
    fuzz::judge("read_wavelet_file", [&] { read_wavelet_file(path, "wavelet", 1e-10, 64); });
    return 0;
}
