// `gprfwi convert IN OUT`: traces between HDF5 (.h5) and SEG-Y (.sgy), with
// the preparation of measured data on the way (docs/field-data.md): origin
// shift, line-source correction (3D to 2D or back), time-zero shift and
// resampling. The output is on gprfwi's trace axis (sample n at (n + 1) dt).

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/field_data.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/segy.hpp"

namespace gprfwi::app {

namespace {

struct ConvertArgs {
    std::string input, output;
    double sample_interval = 0;
    std::string interval_unit = "microsecond";
    std::vector<double> origin;
    double time_zero = 0;
    std::string line_source = "none";
    double velocity = 0, eps_r = 0;
    double dt = 0;
    int nt = 0;
};

void run_convert(const ConvertArgs& a) {
    if (!parallel::is_root()) return;  // a file-to-file tool: one writer
    ObservedSpec spec;
    spec.file = a.input;
    spec.format = data_format_of(a.input);
    const DataFormat out_format = data_format_of(a.output);
    spec.segy.sample_interval_s = a.sample_interval;
    spec.segy.interval_unit_s = a.interval_unit == "picosecond" ? 1e-12 : a.interval_unit == "nanosecond" ? 1e-9 : 1e-6;
    if (!a.origin.empty()) {
        if (a.origin.size() != 2) throw InvalidArgument("--origin: expected X,Z in metres");
        spec.origin = {a.origin[0], a.origin[1]};
    }
    if (a.time_zero != 0) spec.time_zero_s = {a.time_zero};
    if (a.line_source != "none") {
        spec.line_source = a.line_source == "to-2d" ? LineSource::to_2d : LineSource::to_3d;
        if ((a.velocity > 0) == (a.eps_r > 0))
            throw InvalidArgument("--line-source: give the medium's --velocity (m/s) or --eps-r, one of them");
        spec.line_source_velocity = a.velocity > 0 ? a.velocity : speed_of_light() / std::sqrt(a.eps_r);
    }
    const TraceData in = read_trace_file(spec, true);
    spdlog::info("{}: {}", a.input, in.summary);
    const double dt = a.dt > 0 ? a.dt : in.survey.dt;
    // by default as many samples as the input covers after the shift
    const double end = in.t0 + (in.survey.nt - 1) * in.survey.dt - a.time_zero;
    const int nt = a.nt > 0 ? a.nt : static_cast<int>(std::floor(end / dt + 1e-6));
    if (nt < 1) throw InvalidArgument(fmt::format("{}: nothing left after a time zero of {} s", a.input, a.time_zero));
    const TraceData out = prepare_traces(in, spec, dt, nt);
    const std::string what = fmt::format("gprfwi convert {} ({})", a.input, spec.describe());
    if (out_format == DataFormat::segy) write_segy(a.output, out.survey, out.traces, what);
    else write_traces_h5(a.output, out.survey, out.traces, what);
    spdlog::info("wrote {}: {} shots, {} samples of {:.6g} s; {}", a.output, out.survey.shots.size(), nt, dt, spec.describe());
}

}  // namespace

void add_convert_command(CLI::App& app) {
    auto a = std::make_shared<ConvertArgs>();
    CLI::App* cmd = app.add_subcommand("convert", "Traces between HDF5 and SEG-Y, preparing measured data on the way");
    cmd->add_option("input", a->input, "Traces to read: .h5/.hdf5 or .sgy/.segy")->required()->check(CLI::ExistingFile);
    cmd->add_option("output", a->output, "Traces to write: .h5/.hdf5 or .sgy/.segy")->required();
    cmd->add_option("--sample-interval", a->sample_interval, "SEG-Y input: sample interval in s, whatever the file says");
    cmd->add_option("--sample-interval-unit", a->interval_unit, "SEG-Y input: unit of its 16-bit sample interval")
        ->check(CLI::IsMember({"microsecond", "nanosecond", "picosecond"}))
        ->capture_default_str();
    cmd->add_option("--origin", a->origin, "File position of the model's top-left node, X,Z in m")->delimiter(',');
    cmd->add_option("--time-zero", a->time_zero, "File time at which the source fires, s (trace(t) -> trace(t + T))");
    cmd->add_option("--line-source", a->line_source, "to-2d: point-source data to gprfwi's line source; to-3d: back")
        ->check(CLI::IsMember({"none", "to-2d", "to-3d"}))
        ->capture_default_str();
    cmd->add_option("--velocity", a->velocity, "Line-source correction: wave speed of the medium, m/s");
    cmd->add_option("--eps-r", a->eps_r, "Line-source correction: relative permittivity of the medium");
    cmd->add_option("--dt", a->dt, "Output sample interval, s (default: the input's)");
    cmd->add_option("--nt", a->nt, "Output samples per trace (default: what the input covers)");
    cmd->callback([a] { run_convert(*a); });
}

}  // namespace gprfwi::app
