// Quantizer spec strings: `method[:opt,opt,...]`, each opt `key=value` or a
// bare flag (docs/REFERENCE.md#quantizer-specs). This file only splits the grammar
// and reads typed options with errors that name the spec and the allowed
// values; what each method accepts lives with the method, in one table of
// OptionDoc per method (what `tqlab list` prints and what finish() accepts).
// Choice options take their words from the enum's name table (core/name_table.h),
// so a new enum value is one edit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/name_table.h"

namespace tqlab {

/// One option a method accepts, as `tqlab list` documents it.
struct OptionDoc {
  std::string name;     ///< "b", "block", "nc"
  std::string values;   ///< "1..8", "hadamard|hadamard2|haar|none" (choice_list), "" for a flag
  std::string summary;  ///< one line, with the default
};

/// The words of some of an enum's values, in the order given: name(values[0]), ... (a subset of its
/// NameTable, such as the choices of an option whose absence is the remaining value).
template <class Enum, std::size_t N, class Name>
std::vector<std::string> choice_words(const Enum (&values)[N], Name name) {
  std::vector<std::string> words;
  for (const Enum value : values) words.emplace_back(name(value));
  return words;
}

/// "a|b|c": the words as OptionDoc::values and error messages write them.
std::string choice_list(const std::vector<std::string>& words);

struct SpecOption {
  std::string key;
  std::string value;  ///< empty for a bare flag
  bool is_flag = false;
};

/// A spec split into its method and options, in the order written.
struct ParsedSpec {
  std::string text;  ///< the spec as written, escaped and cut (core/text.h printable), for messages
  std::string method;
  std::vector<SpecOption> options;
};

/// Splits `spec` by the grammar. Throws InputError on empty parts or repeated keys.
ParsedSpec split_spec(std::string_view spec);

/// Reads a method's options one by one; finish() rejects any left unread.
class SpecOptionReader {
 public:
  explicit SpecOptionReader(const ParsedSpec& spec) : spec_(spec), used_(spec.options.size(), false) {}

  /// An integer `key=N` with lo <= N <= hi, if present.
  std::optional<int> integer(std::string_view key, int lo, int hi);
  /// A `key=word` whose word is one of `allowed`, if present.
  std::optional<std::string> choice(std::string_view key, const std::vector<std::string>& allowed);
  /// A `key=word` naming one of `values` by `name` (the enum's name table), if present.
  template <class Enum, std::size_t N, class Name>
  std::optional<Enum> choice(std::string_view key, const Enum (&values)[N], Name name) {
    const std::optional<std::string> word = choice(key, choice_words(values, name));
    if (!word) return std::nullopt;
    for (const Enum value : values) {
      if (name(value) == *word) return value;
    }
    return std::nullopt;  // not reached: choice() accepted only these words
  }
  /// A `key=word` naming any row of `names`, if present.
  template <class Enum, std::size_t N>
  std::optional<Enum> choice(std::string_view key, const NameTable<Enum, N>& names) {
    const std::optional<std::string> word = choice(key, names.names());
    if (!word) return std::nullopt;
    return names.parse(*word);
  }
  /// A `key=value` with free-form value, if present.
  std::optional<std::string> text(std::string_view key);
  /// True when the bare flag `key` is present.
  bool flag(std::string_view key);
  /// Throws InputError naming any option not read, with the method's `known` options.
  void finish(const std::vector<OptionDoc>& known) const;

  const ParsedSpec& spec() const { return spec_; }

 private:
  const SpecOption* take(std::string_view key, bool want_flag);
  const ParsedSpec& spec_;
  std::vector<bool> used_;
};

}  // namespace tqlab
