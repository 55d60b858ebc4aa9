// --seed and --seeds for every command that takes them (see commands.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/decimal.h"
#include "core/error.h"

namespace tqlab::cli {

CLI::Option* add_seed_option(CLI::App& command, std::uint64_t& seed, const std::string& description) {
  return command.add_option("--seed", seed, description)->transform(seed_check())->capture_default_str();
}

CLI::Validator seed_check() {
  // Read here, not by CLI11, which would turn -1 into 2^64 - 1, "010" into 8 and clamp
  // 99999999999999999999 to 2^64 - 1 without a word.
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<std::uint64_t> seed = decimal_unsigned(text);
        if (!seed) return "'" + text + "' is not a seed (a non-negative decimal integer, 0 .. 18446744073709551615)";
        text = std::to_string(*seed);
        return "";
      },
      "", kDecimalCheck);
}

std::vector<std::uint64_t> parse_seed_list(const std::string& text, const std::string& command) {
  std::vector<std::uint64_t> seeds;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::optional<std::uint64_t> seed = decimal_unsigned(item);
    if (!seed) {
      fail("{}: --seeds '{}': '{}' is not a seed (a decimal integer 0 .. 18446744073709551615); e.g. --seeds 0,1,2",
           command, text, item);
    }
    for (std::uint64_t earlier : seeds) {
      if (earlier == *seed) fail("{}: --seeds '{}': seed {} is listed twice", command, text, *seed);
    }
    seeds.push_back(*seed);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return seeds;
}

}  // namespace tqlab::cli
