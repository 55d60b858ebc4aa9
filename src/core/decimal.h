// The one reader of integers written as text: command-line options, list items ("0,2,5-7",
// "--seeds 0,1,2"), spec values ("b=3") and keys that are numbers in configs.
//
// Decimal only, whatever the text looks like: ASCII digits with an optional leading '-'. Leading
// zeros are read as decimal ("0100" is 100, "08" is 8), never as octal; "+5", " 5", "5 ", "0x10",
// "1e3" and "" are not integers. A value beyond the allowed range is refused, never clamped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tqlab {

/// The integer `text` spells in decimal, if it is one and lies in [lo, hi]; nullopt otherwise.
std::optional<std::int64_t> decimal_integer(std::string_view text, std::int64_t lo, std::int64_t hi);

/// The same for 0 .. 2^64 - 1 (seeds); a '-' is never accepted.
std::optional<std::uint64_t> decimal_unsigned(std::string_view text);

/// Why `text` is not a decimal integer in [lo, hi], as a phrase ("'0x10' is not a decimal integer
/// (expected LO..HI)", "999 is beyond the range 0..64"); "" when it is one.
std::string decimal_problem(std::string_view text, std::int64_t lo, std::int64_t hi);

/// decimal_integer, or InputError "NAME: PROBLEM" (NAME: the option or key, e.g. "--ctx").
std::int64_t read_decimal(std::string_view text, std::string_view name, std::int64_t lo, std::int64_t hi);

}  // namespace tqlab
