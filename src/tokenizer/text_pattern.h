// What the Split pre-tokenizer and the Replace normalizer and decoder look for:
// tokenizer.json's {"String": "..."} (a literal) or {"Regex": "..."} (a regular
// expression in Oniguruma syntax, which Hugging Face tokenizers compiles; PCRE2
// reads the patterns the Llama 3, Qwen2/3 and GPT-2 families ship unchanged:
// \p{L}, \p{N}, (?i:...), (?!...)).
//
// Regexes are compiled by PCRE2 in UTF mode with Unicode classes for \s, \d and
// \w (PCRE2_UCP) and JIT-compiled. Text need not be UTF-8: a byte that belongs
// to no well-formed UTF-8 character is never part of a match
// (PCRE2_MATCH_INVALID_UTF), so such bytes end up between matches.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tqlab::tokenizer {

/// A match: bytes [begin, end) of the searched text.
struct TextMatch {
  std::size_t begin = 0;
  std::size_t end = 0;
};

class TextPattern {
 public:
  /// A pattern that matches `text` literally. InputError "WHERE: ..." when `text` is empty.
  static TextPattern literal(std::string text, const std::string& where);
  /// A compiled regular expression. InputError "WHERE: ..." with PCRE2's message
  /// and the offset in the expression when PCRE2 refuses it.
  static TextPattern regex(const std::string& expression, const std::string& where);

  /// The non-overlapping matches in `text`, left to right, stored in `matches`
  /// (cleared first). A regex that matches the empty string reports empty
  /// matches, except one right where the previous match ended, and then goes
  /// on one character later (as Oniguruma's search loop does).
  /// InputError naming the pattern when PCRE2 gives up (its JIT stack or match limit).
  void find_all(std::string_view text, std::vector<TextMatch>& matches) const;

  /// `text` with every match replaced by `replacement`.
  std::string replace_all(std::string_view text, std::string_view replacement) const;

  /// True for a regular expression, false for a literal.
  bool is_regex() const { return regex_ != nullptr; }

  /// The pattern as written in the file, for messages.
  const std::string& source() const { return source_; }

 private:
  struct Compiled;
  TextPattern() = default;
  std::string source_;
  std::string where_;
  std::shared_ptr<const Compiled> regex_;  ///< null for a literal
};

}  // namespace tqlab::tokenizer
