// The BPE model of tokenizer.json ("model": {"type": "BPE", ...}): a
// vocabulary (token string -> id), a merge list, and what to do with a
// character the vocabulary lacks (Hugging Face tokenizers docs, "Models";
// tokenizers/src/models/bpe/ for the exact rules followed here):
//
//   1. ignore_merges: a piece that is itself a token is that token.
//   2. Each character of the piece (a stray byte counts as a character) is
//      looked up. A missing one becomes, with byte_fallback, the tokens
//      "<0x00>".."<0xFF>" of its bytes (when all of them exist); else the
//      unk_token (consecutive ones fused into one with fuse_unk); else it is
//      dropped, as Hugging Face drops it.
//   3. The symbols are merged (bpe_merge.h).
//
// SentencePiece-style files (Llama 2, Mistral) have no pre-tokenizer: the
// whole text is one piece, and merging 10 MB at once is slow (cache misses in
// a queue of millions). When no merge of the file makes a token in which "▁"
// (U+2581, the space of these vocabularies) follows another character, no
// token can span a place where "▁" follows another character, so the piece is
// cut there first and each word merged on its own: the same tokens, checked on
// load, and the words repeat, so the word cache serves most of them.
//
// Merges come in either of the two forms files use: "a b" strings (a line of
// merges.txt; "#version" lines are skipped) or ["a", "b"] pairs. Both sides
// and their concatenation must be tokens of the vocabulary. A pair listed
// twice takes its later rank, as Hugging Face's map does.
//
// Not supported (InputError): dropout above 0 (random segmentation), and a
// non-empty continuing_subword_prefix or end_of_word_suffix.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <span>
#include <vector>

#include "tokenizer/bpe_merge.h"
#include "tokenizer/flat_tables.h"

namespace tqlab {
class JsonReader;
}

namespace tqlab::tokenizer {

/// Pieces already tokenized in one encode call: real text repeats its words,
/// and looking a word up is much cheaper than merging it again. Not shared
/// between threads (each encode call has its own).
class BpeWordCache {
 public:
  /// At most this many words are kept (later ones are merged every time).
  static constexpr std::size_t kMaxWords = 1 << 18;
  /// Words of at least this many bytes are not kept (a long word seldom repeats).
  static constexpr std::size_t kMaxWordBytes = 256;

  /// Appends the ids stored for `word` to `out` and returns true, or returns false.
  bool append_if_known(std::string_view word, std::vector<std::int32_t>& out) const;
  void store(std::string_view word, std::span<const std::int32_t> ids);

 private:
  struct Ids {
    std::uint32_t offset;
    std::uint32_t count;
  };
  StringTable<Ids> words_;
  std::vector<std::int32_t> ids_;
};

class BpeModel {
 public:
  /// Reads the "model" object; InputError naming the JSON path on any defect.
  static BpeModel from_json(const JsonReader& json);

  /// Appends the ids of `piece` to `out`. `cache` may be shared by the calls of one encode.
  void tokenize(std::string_view piece, BpeWordCache& cache, std::vector<std::int32_t>& out) const;

  /// The id of token `text`, or nullopt.
  std::optional<std::int32_t> id_of(std::string_view text) const;
  /// The token of `id`, or nullptr when no token has it.
  const std::string* token_of(std::int32_t id) const;
  /// One more than the largest id of the vocabulary.
  std::int64_t id_limit() const { return static_cast<std::int64_t>(tokens_.size()); }
  std::size_t vocabulary_size() const { return vocabulary_.size(); }
  std::size_t merge_count() const { return merges_.size(); }
  /// True when every byte value has a fallback token, so any bytes can be tokenized.
  bool falls_back_on_every_byte() const;
  const MergeTable& merges() const { return merges_; }

 private:
  // from_json's steps on the model it builds. The "vocab" object: vocabulary_ and the tables by id (tokens_,
  // has_token_, char_ids_).
  void read_vocabulary(const JsonReader& vocabulary);
  // The "merges" array (after the vocabulary): merges_ by rank, and cut_before_metaspace_ (after ignore_merges_).
  void read_merges(const JsonReader& merges);
  // Steps 2 and 3 of the header on one word, through the cache.
  void tokenize_word(std::string_view word, BpeWordCache& cache, std::vector<std::int32_t>& out) const;
  // Step 2 of the header: the symbols of `piece` before merging.
  void initial_symbols(std::string_view piece, std::vector<std::int32_t>& symbols) const;

  StringTable<std::int32_t> vocabulary_;
  /// The id of the one-character token of each code point below kDirectCodePoints, -1 when none:
  /// most characters a piece starts from are found without hashing.
  static constexpr char32_t kDirectCodePoints = 0x10000;
  std::vector<std::int32_t> char_ids_;
  std::vector<std::string> tokens_;  ///< by id; empty for an id no token has
  std::vector<bool> has_token_;      ///< by id
  MergeTable merges_;
  std::optional<std::int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool cut_before_metaspace_ = false;  ///< see the header: merging never joins "x" and "▁"
  std::array<std::int32_t, 256> byte_ids_{};  ///< "<0xXX>" ids, -1 when absent
};

}  // namespace tqlab::tokenizer
