// Added tokens: strings of tokenizer.json's "added_tokens" (special tokens such
// as "<|begin_of_text|>", "<s>", "<|im_start|>", and other added words), found
// in the text before the model sees it and given their id whole (Hugging Face
// tokenizers docs, "Added Tokens"; tokenizers/src/tokenizer/added_vocabulary.rs):
//
//   - tokens with normalized false are matched in the raw text, then the
//     stretches between them are normalized and tokens with normalized true
//     are matched there, in their normalized form;
//   - at each step the leftmost match wins, the longest of those starting there;
//   - single_word: a match with a word character (unicode_text.h) right
//     before or after it is not a match (the search goes on after it);
//   - lstrip / rstrip: the white space before / after a match joins the token;
//   - an added token's id is the model vocabulary's id for the same string
//     when it has one, else the next free id after the vocabulary, in file
//     order (so a file's ids are reproduced; a different "id" is warned about).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace tqlab::tokenizer {

/// One entry of "added_tokens".
struct AddedToken {
  std::string content;
  std::int32_t id = 0;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

/// A stretch of text: either an added token's id, or text for the next stage.
struct TextSegment {
  std::size_t begin = 0;  ///< byte offset in the searched text
  std::size_t end = 0;
  std::int32_t token_id = -1;  ///< -1: plain text
};

/// Leftmost-longest matching of a set of strings, with the flags above.
class AddedTokenMatcher {
 public:
  /// `patterns[i]` is what token `tokens[i]` is matched as (its content, or its normalized content).
  AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns);
  bool empty() const { return tokens_.empty(); }

  /// Cuts `text` into plain stretches and matched tokens, covering it in order
  /// (no empty plain stretch). O(text bytes x longest pattern).
  std::vector<TextSegment> split(std::string_view text) const;

 private:
  // A byte trie of the patterns: node 0 is the root.
  struct Node {
    std::vector<std::pair<unsigned char, std::int32_t>> children;
    std::int32_t token = -1;  ///< index into tokens_ of the pattern ending here
  };
  // Index into tokens_ and length of the longest pattern at text[at], or {-1, 0}.
  std::pair<std::int32_t, std::size_t> longest_at(std::string_view text, std::size_t at) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> trie_;
  std::array<bool, 256> can_start_{};
};

}  // namespace tqlab::tokenizer
