#include "core/decimal.h"

#include <charconv>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "core/error.h"
#include "core/text.h"

namespace tqlab {
namespace {

constexpr std::uint64_t kMaxUnsigned = std::numeric_limits<std::uint64_t>::max();

// The digits alone, read in base 10 (std::from_chars never takes a base prefix or a sign of
// its own here): nullopt for anything but digits, or beyond 2^64 - 1.
std::optional<std::uint64_t> magnitude(std::string_view digits) {
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  std::uint64_t value = 0;
  const auto [stop, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 10);
  if (error != std::errc() || stop != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// The signed value of `text`, or nullopt when it is no integer or beyond int64.
std::optional<std::int64_t> signed_value(std::string_view text) {
  const bool negative = text.starts_with('-');
  const std::optional<std::uint64_t> size = magnitude(negative ? text.substr(1) : text);
  if (!size) return std::nullopt;
  constexpr auto kMaxSigned = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!negative) {
    if (*size <= kMaxSigned) return static_cast<std::int64_t>(*size);
    return std::nullopt;
  }
  if (*size <= kMaxSigned) return -static_cast<std::int64_t>(*size);
  if (*size == kMaxSigned + 1) return std::numeric_limits<std::int64_t>::min();
  return std::nullopt;
}

// A text too long to echo whole (a mistyped paste) is cut.
std::string shown(std::string_view text) { return printable(std::string(text), 40); }

}  // namespace

std::optional<std::int64_t> decimal_integer(std::string_view text, std::int64_t lo, std::int64_t hi) {
  const std::optional<std::int64_t> value = signed_value(text);
  if (!value || *value < lo || *value > hi) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> decimal_unsigned(std::string_view text) { return magnitude(text); }

std::string decimal_problem(std::string_view text, std::int64_t lo, std::int64_t hi) {
  if (decimal_integer(text, lo, hi)) return "";
  if (text.empty()) return "an empty value is not an integer";
  const bool negative = text.starts_with('-');
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return fmt::format("'{}' is not a decimal integer (digits only, e.g. 100; leading zeros are decimal)", shown(text));
  }
  return fmt::format("{} is out of range (expected {}..{})", shown(text), lo, hi);
}

std::int64_t read_decimal(std::string_view text, std::string_view name, std::int64_t lo, std::int64_t hi) {
  if (const std::optional<std::int64_t> value = decimal_integer(text, lo, hi)) return *value;
  fail("{}: {}", name, decimal_problem(text, lo, hi));
}

}  // namespace tqlab
