// Matching added tokens (added_tokens.h).
#include "tokenizer/added_tokens.h"

#include "tokenizer/unicode_text.h"

namespace tqlab::tokenizer {
namespace {

// The code point of the character that ends text[0, end), or nullopt for a stray byte / none.
bool char_before(std::string_view text, std::size_t end, char32_t& code_point) {
  for (std::size_t length = 1; length <= 4 && length <= end; ++length) {
    char32_t value = 0;
    if (utf8_char_at(text.substr(end - length, length), value) == length) {
      code_point = value;
      return true;
    }
  }
  return false;
}

bool word_char_before(std::string_view text, std::size_t end) {
  char32_t code_point = 0;
  return char_before(text, end, code_point) && is_word_char(code_point);
}

bool word_char_after(std::string_view text, std::size_t begin) {
  char32_t code_point = 0;
  return utf8_char_at(text.substr(begin), code_point) != 0 && is_word_char(code_point);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns)
    : tokens_(std::move(tokens)), trie_(1) {
  for (std::size_t index = 0; index < tokens_.size(); ++index) {
    const std::string& pattern = patterns[index];
    if (pattern.empty()) continue;
    std::int32_t node = 0;
    for (const char c : pattern) {
      const auto byte = static_cast<unsigned char>(c);
      std::int32_t next = -1;
      for (const auto& [child_byte, child] : trie_[node].children) {
        if (child_byte == byte) next = child;
      }
      if (next < 0) {
        next = static_cast<std::int32_t>(trie_.size());
        trie_[node].children.emplace_back(byte, next);
        trie_.emplace_back();
      }
      node = next;
    }
    trie_[node].token = static_cast<std::int32_t>(index);  // a later duplicate wins, like a map insert
    can_start_[static_cast<unsigned char>(pattern[0])] = true;
  }
}

std::pair<std::int32_t, std::size_t> AddedTokenMatcher::longest_at(std::string_view text, std::size_t at) const {
  std::pair<std::int32_t, std::size_t> best{-1, 0};
  std::int32_t node = 0;
  for (std::size_t i = at; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::int32_t next = -1;
    for (const auto& [child_byte, child] : trie_[node].children) {
      if (child_byte == byte) next = child;
    }
    if (next < 0) break;
    node = next;
    if (trie_[node].token >= 0) best = {trie_[node].token, i + 1 - at};
  }
  return best;
}

std::vector<TextSegment> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<TextSegment> segments;
  std::size_t plain_start = 0;  // where the text not yet given to a segment begins
  std::size_t at = 0;
  while (at < text.size()) {
    if (!can_start_[static_cast<unsigned char>(text[at])]) {
      ++at;
      continue;
    }
    const auto [index, length] = longest_at(text, at);
    if (index < 0) {
      ++at;
      continue;
    }
    const AddedToken& token = tokens_[index];
    std::size_t begin = at;
    std::size_t end = at + length;
    // The search goes on after a match whether or not it is kept (leftmost non-overlapping matches).
    at = end;
    if (token.single_word && (word_char_before(text, begin) || word_char_after(text, end))) continue;
    if (token.lstrip) begin = plain_start + trailing_white_space_start(text.substr(plain_start, begin - plain_start));
    if (token.rstrip) end += leading_white_space_length(text.substr(end));
    if (begin > plain_start) segments.push_back({plain_start, begin, -1});
    segments.push_back({begin, end, token.id});
    plain_start = end;
    at = end;
  }
  if (plain_start < text.size()) segments.push_back({plain_start, text.size(), -1});
  return segments;
}

}  // namespace tqlab::tokenizer
