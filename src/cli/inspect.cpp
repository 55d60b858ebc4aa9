#include "cli/commands.h"

namespace tqlab::cli {
void setup_inspect(CLI::App& app, int& exit_code) {
  auto* command = app.add_subcommand("inspect", "List a tensor file's tensors with statistics");
  command->callback([&exit_code] { exit_code = 0; });
}
}  // namespace tqlab::cli
