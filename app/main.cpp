// gprfwi: ground-penetrating-radar full-waveform inversion.
// Exit codes: 0 success; 2 bad usage or input; 1 any other failure.

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "gprfwi/error.hpp"

int main(int argc, char** argv) {
    CLI::App app{"gprfwi: 2D TM full-waveform inversion of ground-penetrating-radar data"};
    app.set_version_flag("--version", std::string("gprfwi ") + GPRFWI_VERSION + " (" + GPRFWI_GIT_REVISION + ")");
    app.require_subcommand(1);
    gprfwi::app::add_forward_command(app);
    gprfwi::app::add_bench_command(app);
    gprfwi::app::add_check_command(app);
    gprfwi::app::add_gradient_command(app);
    gprfwi::app::add_info_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    } catch (const gprfwi::InvalidArgument& e) {  // ConfigError too
        spdlog::error("{}", e.what());
        return 2;
    } catch (const gprfwi::SizeMismatch& e) {
        spdlog::error("{}", e.what());
        return 2;
    } catch (const gprfwi::PositionOutsideModel& e) {
        spdlog::error("{}", e.what());
        return 2;
    } catch (const gprfwi::UnstableTimeStep& e) {
        spdlog::error("{}", e.what());
        return 2;
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
    return 0;
}
