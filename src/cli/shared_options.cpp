// The options several commands share, each defined here once, and the rules every option of
// every command follows (see commands.h).
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/decimal.h"
#include "core/error.h"

namespace tqlab::cli {
namespace {

void apply_rules_to(CLI::App& command) {
  for (CLI::Option* option : command.get_options()) {
    if (option->get_expected_min() == 0) continue;  // a flag takes no value
    const std::string type = option->get_type_name();
    if (type.starts_with("INT") || type.starts_with("UINT")) {
      try {
        option->get_validator(kDecimalCheck);
      } catch (const CLI::OptionNotFound&) {
        // CLI11's own conversion reads "010" as octal and clamps some overflows: every integer option
        // goes through core/decimal.h instead.
        throw InternalError("option " + option->get_name() + " of '" + command.get_name() +
                            "' is an integer without the decimal check (cli::decimal)");
      }
    }
    // An empty value is never a choice: it is an unset shell variable, or a typo.
    option->check(CLI::Validator(
        [](const std::string& value) {
          return value.empty() ? std::string("an empty value is not allowed (give one, or leave the option out)")
                               : std::string();
        },
        "", "non-empty"));
  }
  for (CLI::App* sub : command.get_subcommands([](CLI::App*) { return true; })) apply_rules_to(*sub);
}

}  // namespace

CLI::Option* decimal(CLI::Option* option, std::int64_t lo, std::int64_t hi) {
  // The text is read here and handed on in its plain decimal form, which CLI11 then converts
  // without surprises ("08" -> "8", never octal).
  return option->transform(CLI::Validator(
      [lo, hi](std::string& text) {
        const std::optional<std::int64_t> value = decimal_integer(text, lo, hi);
        if (!value) return decimal_problem(text, lo, hi);
        text = std::to_string(*value);
        return std::string();
      },
      "", kDecimalCheck));
}

CLI::Option* add_threads_option(CLI::App& command, int& threads) {
  return decimal(command.add_option("--threads", threads, "Worker threads (0: every core this process may use)"), 0,
                 kMaxThreadsOption)
      ->capture_default_str();
}

CLI::Option* add_quiet_flag(CLI::App& command, bool& quiet) {
  return command.add_flag("-q,--quiet", quiet, "No progress line and no informational messages");
}

void add_seeds_options(CLI::App& command, std::string& seeds, const std::string& when_left_out) {
  command.add_option("--seeds", seeds, "Seeds, e.g. 0,1,2 (" + when_left_out + ")");
  command.add_option("--seed", seeds, "One seed (as --seeds with one)")->transform(seed_check());
}

CLI::Option* add_output_option(CLI::App& command, std::string& output, const std::string& description,
                               const std::string& names) {
  return command.add_option(names, output, description);
}

void apply_shared_rules(CLI::App& app) { apply_rules_to(app); }

}  // namespace tqlab::cli
