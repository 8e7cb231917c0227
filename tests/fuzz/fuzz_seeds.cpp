// Writes the seed inputs of the fuzz targets that read binary or generated
// files, with gprfwi's own writers (so the seeds follow the formats as they
// are today): fuzz_seeds DIR makes DIR/hdf5 (a model, a traces file, a
// wavelet), DIR/segy (traces in sample formats 5, 1 and 2) and DIR/text (a
// numpy-style wavelet, a picks file).

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gprfwi/config.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/segy.hpp"
#include "gprfwi/tomography.hpp"
#include "gprfwi/wavelet.hpp"

int main(int argc, char** argv) {
    using namespace gprfwi;
    namespace fs = std::filesystem;
    if (argc != 2) {
        std::fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    const fs::path dir = argv[1];
    for (const char* sub : {"hdf5", "segy", "text"}) fs::create_directories(dir / sub);

    const Grid grid{12, 10, 0.05, 0.05};
    Model model = Model::uniform(grid, 4.0, 0.01);
    model.eps_r(3, 4) = 9.0;
    const std::string config = "model:\n  grid: {nx: 12, nz: 10, dx: 0.05, dz: 0.05}\n";
    write_model_h5((dir / "hdf5/model.h5").string(), model, config);

    Survey survey;
    survey.dt = 1e-10;
    survey.nt = 16;
    for (int s = 0; s < 2; ++s) {
        Shot shot;
        shot.sources.push_back({{0.1 + 0.2 * s, 0.05}, 1.0});
        shot.receivers = {{0.2, 0.4}, {0.3, 0.4}, {0.4, 0.4}};
        shot.wavelet = ricker(survey.nt, survey.dt, 1e9);
        survey.shots.push_back(shot);
    }
    Traces traces = make_traces(survey);
    for (ShotTraces& t : traces)
        for (std::size_t i = 0; i < t.samples().size(); ++i) t.samples()[i] = 0.5 - static_cast<double>(i % 7) / 7;
    write_traces_h5((dir / "hdf5/traces.h5").string(), survey, traces, config);
    write_vector_h5((dir / "hdf5/wavelet.h5").string(), "wavelet", survey.shots[0].wavelet, 1e-10, "A", config);

    const fs::path segy = dir / "segy/traces-format5.sgy";
    write_segy(segy.string(), survey, traces, "fuzz seed");
    // The same file declaring IBM floats (1) and int32 (2), samples of the same size.
    for (int format : {1, 2}) {
        const fs::path copy = dir / ("segy/traces-format" + std::to_string(format) + ".sgy");
        fs::copy_file(segy, copy, fs::copy_options::overwrite_existing);
        std::fstream f(copy, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(3224);  // bytes 3225-3226: data sample format code, big-endian
        const char code[2] = {0, static_cast<char>(format)};
        f.write(code, 2);
    }

    std::ofstream((dir / "text/wavelet.txt").string()) << "# numpy.savetxt\n1.000000000000000000e+00\n"
                                                          "-2.181391268132436256e-308\n.5\n+3\n1E-5\n";
    const Picks picks = {{1e-9, 2e-9, std::nan(""), 3.5e-9}, {1e-9, 1.1e-9, 1.2e-9, 1.3e-9, 1.4e-9}};
    std::ofstream((dir / "text/picks.csv").string()) << picks_csv_header() << picks_csv_rows(picks, {0, 2});
    return 0;
}
