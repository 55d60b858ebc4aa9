#include "cli/commands.h"

namespace tqlab::cli {
void setup_synth(CLI::App& app, int& exit_code) {
  auto* command = app.add_subcommand("synth", "Write KV-like synthetic tensors");
  command->callback([&exit_code] { exit_code = 0; });
}
}  // namespace tqlab::cli
