#pragma once
// Sub-commands of the gprfwi executable.

#include <CLI/CLI.hpp>

namespace gprfwi::app {

void add_forward_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_gradient_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_invert_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_tomography_command(CLI::App& app);
void add_born_command(CLI::App& app);
void add_hessian_command(CLI::App& app);

}  // namespace gprfwi::app
