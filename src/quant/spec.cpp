#include "quant/spec.h"

#include <algorithm>
#include <charconv>

#include <fmt/ranges.h>

#include "core/decimal.h"
#include "core/error.h"
#include "core/text.h"

namespace tqlab {

ParsedSpec split_spec(std::string_view spec) {
  ParsedSpec parsed;
  parsed.text = printable(spec);  // for messages: a spec may come from a file, and run to any length
  const std::size_t colon = spec.find(':');
  parsed.method = std::string(spec.substr(0, colon));
  if (parsed.method.empty()) fail("quantizer spec '{}': missing method name before ':'", parsed.text);
  if (colon == std::string_view::npos) return parsed;
  std::string_view rest = spec.substr(colon + 1);
  if (rest.empty()) fail("quantizer spec '{}': nothing after ':'", parsed.text);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item.empty()) fail("quantizer spec '{}': empty option (doubled or trailing ',')", parsed.text);
    SpecOption option;
    const std::size_t equals = item.find('=');
    option.key = std::string(item.substr(0, equals));
    if (equals == std::string_view::npos) {
      option.is_flag = true;
    } else {
      option.value = std::string(item.substr(equals + 1));
      if (option.value.empty())
        fail("quantizer spec '{}': option '{}' has no value", parsed.text, printable(option.key));
    }
    if (option.key.empty()) fail("quantizer spec '{}': option with no name", parsed.text);
    for (const SpecOption& earlier : parsed.options) {
      if (earlier.key == option.key)
        fail("quantizer spec '{}': option '{}' given twice", parsed.text, printable(option.key));
    }
    parsed.options.push_back(std::move(option));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return parsed;
}

const SpecOption* SpecOptionReader::take(std::string_view key, bool want_flag) {
  for (std::size_t i = 0; i < spec_.options.size(); ++i) {
    const SpecOption& option = spec_.options[i];
    if (option.key != key) continue;
    if (want_flag && !option.is_flag) {
      fail("quantizer spec '{}': '{}' is a flag and takes no value", spec_.text, printable(key));
    }
    if (!want_flag && option.is_flag) {
      fail("quantizer spec '{}': option '{}' needs a value ({}=...)", spec_.text, printable(key), printable(key));
    }
    used_[i] = true;
    return &option;
  }
  return nullptr;
}

std::optional<int> SpecOptionReader::integer(std::string_view key, int lo, int hi) {
  const SpecOption* option = take(key, false);
  if (option == nullptr) return std::nullopt;
  const std::optional<std::int64_t> value = decimal_integer(option->value, lo, hi);
  if (!value) {
    fail("quantizer spec '{}': {}={} is not allowed, expected an integer in {}..{}", spec_.text, key,
         printable(option->value), lo, hi);
  }
  return static_cast<int>(*value);
}

std::optional<std::string> SpecOptionReader::choice(std::string_view key, const std::vector<std::string>& allowed) {
  const SpecOption* option = take(key, false);
  if (option == nullptr) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), option->value) == allowed.end()) {
    fail("quantizer spec '{}': {}={} is not allowed, expected one of {}", spec_.text, key, printable(option->value),
         choice_list(allowed));
  }
  return option->value;
}

std::optional<std::string> SpecOptionReader::text(std::string_view key) {
  const SpecOption* option = take(key, false);
  if (option == nullptr) return std::nullopt;
  return option->value;
}

bool SpecOptionReader::flag(std::string_view key) { return take(key, true) != nullptr; }

void SpecOptionReader::finish(const std::vector<OptionDoc>& known) const {
  for (std::size_t i = 0; i < spec_.options.size(); ++i) {
    if (used_[i]) {
      // The method read an option its table does not document: the two lists disagree.
      const bool documented = std::any_of(known.begin(), known.end(),
                                          [&](const OptionDoc& option) { return option.name == spec_.options[i].key; });
      if (!documented) {
        throw InternalError(fmt::format("method '{}' reads option '{}', which its option table lacks", spec_.method,
                                        spec_.options[i].key));
      }
      continue;
    }
    if (known.empty()) {
      fail("quantizer spec '{}': method '{}' takes no options", spec_.text, printable(spec_.method));
    }
    std::vector<std::string_view> names;
    for (const OptionDoc& option : known) names.push_back(option.name);
    fail("quantizer spec '{}': unknown option '{}' for '{}' (known: {})", spec_.text, printable(spec_.options[i].key),
         spec_.method, fmt::join(names, ", "));
  }
}

std::string choice_list(const std::vector<std::string>& words) { return fmt::format("{}", fmt::join(words, "|")); }

}  // namespace tqlab
