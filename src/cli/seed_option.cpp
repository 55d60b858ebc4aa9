// --seed and --seeds for every command that takes them (see commands.h).
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"

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

std::vector<std::uint64_t> parse_seed_list(const std::string& text, const std::string& command) {
  std::vector<std::uint64_t> seeds;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::uint64_t seed = 0;
    const auto [stop, error] = std::from_chars(item.data(), item.data() + item.size(), seed);
    if (item.empty() || error != std::errc() || stop != item.data() + item.size()) {
      fail("{}: --seeds '{}': '{}' is not a seed (a non-negative integer); e.g. --seeds 0,1,2", command, text, item);
    }
    for (std::uint64_t earlier : seeds) {
      if (earlier == seed) fail("{}: --seeds '{}': seed {} is listed twice", command, text, seed);
    }
    seeds.push_back(seed);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return seeds;
}

}  // namespace tqlab::cli
