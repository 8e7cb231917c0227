// Fuzz target: the HDF5 readers, the way runs use them: a model file
// (model.file), a traces file (data.observed: geometry and samples), a
// wavelet dataset. Seeds: files of each kind written by gprfwi (fuzz_seeds).

#include "fuzz_support.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/hdf5_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace gprfwi;
    const std::string path = fuzz::input_file(data, size, "input.h5");
    const Grid grid{12, 10, 0.05, 0.05};  // the seed model's
    fuzz::judge("read_model_h5", [&] { read_model_h5(path, grid); });
    fuzz::judge("read_trace_data_h5", [&] { read_trace_data_h5(path); });
    fuzz::judge("read_wavelet_file", [&] { read_wavelet_file(path, "wavelet", 1e-10, 64); });
    return 0;
}
