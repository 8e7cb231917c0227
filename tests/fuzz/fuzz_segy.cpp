// Fuzz target: the SEG-Y reader (data.observed with format segy), geometry
// only and with samples, in microseconds and picoseconds. Seeds: SEG-Y files
// written by gprfwi in its sample formats (fuzz_seeds).

#include "fuzz_support.hpp"
#include "gprfwi/segy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace gprfwi;
    const std::string path = fuzz::input_file(data, size, "input.sgy");
    fuzz::judge("read_segy (geometry)", [&] { read_segy(path, {}, false); });
    SegyReadOptions picoseconds;
    picoseconds.interval_unit_s = 1e-12;
    fuzz::judge("read_segy", [&] { read_segy(path, picoseconds, true); });
    return 0;
}
