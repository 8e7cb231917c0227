// Fuzz target: run files and campaigns (YAML) as `gprfwi forward`, `gradient`
// and `invert` read them. Seeds: every run file in configs/ and tests/data.

#include "fuzz_support.hpp"
#include "gprfwi/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace gprfwi;
    const std::string path = fuzz::input_file(data, size, "run.yaml");
    fuzz::judge("load_run_config", [&] { load_run_config(path); });
    fuzz::judge("load_campaign", [&] { load_campaign(path); });
    return 0;
}
