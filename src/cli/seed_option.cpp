// --seed for every command that takes one (see commands.h).
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace tqlab::cli {

CLI::Option* add_seed_option(CLI::App& command, std::uint64_t& seed, const std::string& description) {
  // The validator sees the text before CLI11 converts it, which would turn -1
  // into 2^64 - 1 without a word.
  const CLI::Validator non_negative(
      [](std::string& text) -> std::string {
        if (text.find('-') != std::string::npos) {
          return "must be a non-negative integer (0 .. 18446744073709551615), got " + text;
        }
        return "";
      },
      "", "non-negative");
  return command.add_option("--seed", seed, description)->check(non_negative)->capture_default_str();
}

}  // namespace tqlab::cli
