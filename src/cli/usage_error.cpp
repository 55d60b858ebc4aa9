// One-line messages for command-line usage errors, and the command they name (see commands.h).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"

namespace tqlab::cli {

namespace {

// The deepest subcommand the parser entered (the app itself when none).
const CLI::App* entered_command(const CLI::App& app) {
  const CLI::App* entered = &app;
  while (!entered->get_subcommands().empty()) entered = entered->get_subcommands().front();
  return entered;
}

}  // namespace

std::string command_path(const CLI::App& app) {
  std::string path;
  for (const CLI::App* command = entered_command(app); command->get_parent() != nullptr;
       command = command->get_parent()) {
    path = " " + command->get_name() + path;
  }
  return "tqlab" + path;
}

std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error) {
  // The deepest subcommand the parser entered is the command whose usage was wrong;
  // its --help is the page that answers the user.
  const std::string command = command_path(app);
  const CLI::App* entered = entered_command(app);
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
