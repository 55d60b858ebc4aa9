// The subcommands of the tqlab binary, one file each (src/cli/<name>.cpp).
// Each setup_* registers its subcommand, options and callback on `app`; the
// callback stores the command's exit code (0 ok, 1 difference, 2 input error)
// in `exit_code`. User errors are thrown as InputError and handled in main.
#pragma once

#include <CLI/CLI.hpp>

namespace tqlab::cli {

void setup_inspect(CLI::App& app, int& exit_code);
void setup_synth(CLI::App& app, int& exit_code);
void setup_codebook(CLI::App& app, int& exit_code);
void setup_verify_bounds(CLI::App& app, int& exit_code);

}  // namespace tqlab::cli
