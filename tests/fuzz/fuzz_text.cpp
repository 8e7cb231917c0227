// Fuzz target: the text readers: wavelet files (one sample per line, as
// numpy.savetxt writes them) and first-break picks (CSV, as `gprfwi
// tomography` writes them for hand editing). Seeds: both kinds (fuzz_seeds).

#include "fuzz_support.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/tomography.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace gprfwi;
    const std::string path = fuzz::input_file(data, size, "input.txt");
    fuzz::judge("read_wavelet_file", [&] { read_wavelet_file(path, "", 1e-10, 256); });
    // the seed picks' survey: 3 shots of 4, 2 and 5 receivers, the file holding shots 0 and 2
    static const Survey survey = [] {
        Survey s;
        s.dt = 1e-10;
        s.nt = 16;
        for (int n : {4, 2, 5}) {
            Shot shot;
            shot.sources.push_back({{0.1, 0.1}, 1.0});
            shot.receivers.assign(static_cast<std::size_t>(n), Position{0.2, 0.3});
            shot.wavelet.assign(16, 0.0);
            s.shots.push_back(shot);
        }
        return s;
    }();
    fuzz::judge("read_picks_csv", [&] { read_picks_csv(path, survey, {0, 2}); });
    return 0;
}
