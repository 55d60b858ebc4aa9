// One-line messages for command-line usage errors (see commands.h).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"

namespace tqlab::cli {

std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error) {
  // The deepest subcommand the parser entered is the command whose usage was wrong;
  // its --help is the page that answers the user.
  std::string command = "tqlab";
  const CLI::App* entered = &app;
  while (!entered->get_subcommands().empty()) {
    entered = entered->get_subcommands().front();
    command += " " + entered->get_name();
  }
  if (entered == &app) {
    // CLI11 reports a mistyped command as "A subcommand is required" and keeps the word
    // among the unparsed arguments: name it, and list what would have been accepted.
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      commands.push_back(sub->get_name());
    }
    const std::vector<std::string> unparsed = app.remaining(true);
    for (const std::string& word : unparsed) {
      if (!word.starts_with("-")) {
        return fmt::format("unknown command '{}', expected one of: {} (see tqlab --help)", word,
                           fmt::join(commands, ", "));
      }
    }
    if (!unparsed.empty()) return fmt::format("unknown option '{}' (see tqlab --help)", unparsed.front());
    // The top level requires nothing but a command.
    if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
      return fmt::format("a command is required, one of: {} (see tqlab --help)", fmt::join(commands, ", "));
    }
  }
  return fmt::format("{}: {} (see {} --help)", command, error.what(), command);
}

}  // namespace tqlab::cli
