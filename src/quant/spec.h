// Quantizer spec strings: `method[:opt,opt,...]`, each opt `key=value` or a
// bare flag (DESIGN.md "Quantizer specs"). This file only splits the grammar
// and reads typed options with errors that name the spec and the allowed
// values; what each method accepts lives with the method.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tqlab {

struct SpecOption {
  std::string key;
  std::string value;  ///< empty for a bare flag
  bool is_flag = false;
};

/// A spec split into its method and options, in the order written.
struct ParsedSpec {
  std::string text;  ///< the spec as written, for messages
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
  /// A `key=value` with free-form value, if present.
  std::optional<std::string> text(std::string_view key);
  /// True when the bare flag `key` is present.
  bool flag(std::string_view key);
  /// Throws InputError naming any option not read, with the method's `known` options.
  void finish(const std::vector<std::string>& known) const;

  const ParsedSpec& spec() const { return spec_; }

 private:
  const SpecOption* take(std::string_view key, bool want_flag);
  const ParsedSpec& spec_;
  std::vector<bool> used_;
};

}  // namespace tqlab
