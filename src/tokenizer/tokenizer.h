// A Hugging Face tokenizer.json applied in C++: text bytes to token ids and back.
//
// Encoding follows Hugging Face tokenizers step by step (its docs, "The
// tokenization pipeline"), for the BPE families of tokenizer.json files:
//   1. added tokens with normalized false are found in the raw text;
//   2. each stretch between them is normalized (normalizer.h), and added
//      tokens with normalized true are found in what that gives;
//   3. each remaining stretch is cut into pieces by the pre-tokenizer
//      (pre_tokenizer.h);
//   4. each piece goes through the BPE model (bpe_model.h);
//   5. with add_special_tokens, the post-processor's ids go around the result
//      (post_processor.h).
// Byte-level BPE (GPT-2 style: Llama 3, Qwen2, Qwen3) and SentencePiece-style
// BPE (Llama 2, Mistral: Metaspace, or the Prepend/Replace normalizers, with
// byte_fallback) are supported; other models (Unigram, WordPiece, WordLevel)
// and unknown component types are refused on load, naming them.
//
// Text that is not UTF-8: a tokenizer whose pre-tokenizer writes pieces in the
// byte-level alphabet, or whose model has a fallback token for every byte,
// takes any bytes (a stray byte is a character of its own, never part of a
// regex match; byte-level: it becomes its byte's token; byte fallback: its
// "<0xXX>" token). Any other tokenizer refuses such text (InputError).
//
// truncation and padding in the file are ignored: the whole text is encoded.
// The "pair" template is not used: one text is one sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tqlab {

/// Called now and then while a long text is encoded: bytes of the text done, of total.
using EncodeProgress = std::function<void(std::size_t done, std::size_t total)>;

class Tokenizer {
 public:
  /// Reads `path`, a tokenizer.json, a folder holding one, or a GGUF file (told by its
  /// magic) whose embedded tokenizer is read (gguf_vocabulary.h). InputError naming
  /// the file and the JSON path or GGUF key on any defect or unsupported component.
  static Tokenizer load(const std::string& path);
  /// The same from the file's text, `name` standing for the file in messages (a fuzz
  /// target feeds it bytes; tests, documents written in memory).
  static Tokenizer parse(std::string_view json_text, const std::string& name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  /// The ids of `text_bytes`, with the post-processor's special tokens (Llama 2's
  /// "<s>" first) when `add_special_tokens`. Special-token strings inside the
  /// text are matched either way, as Hugging Face does. InputError (starting
  /// "not UTF-8 ...", without the text's name: the caller names it)
  /// when this tokenizer cannot take the text's bytes. Safe to call from
  /// several threads at once.
  ///
  /// `max_ids`: stop once that many ids are known and return them. Pieces are
  /// tokenized left to right and their ids only appended, so these are exactly the
  /// first `max_ids` ids of the whole text's encoding (all of them when it has
  /// fewer); the text is still normalized and cut into pieces up to the end of the
  /// stretch the last id came from, but the BPE merges, the costly step, stop.
  std::vector<std::int32_t> encode(std::string_view text_bytes, bool add_special_tokens,
                                   const EncodeProgress& progress = {}, std::size_t max_ids = kAllIds) const;
  static constexpr std::size_t kAllIds = static_cast<std::size_t>(-1);

  /// The bytes `ids` stand for, through the file's decoder (decoder.h); with
  /// `skip_special_tokens` special tokens are left out. InputError naming the
  /// first id that is no token's.
  std::string decode(std::span<const std::int32_t> ids, bool skip_special_tokens) const;

  /// Whether encoding with add_special_tokens, the default of Hugging Face's
  /// encode and of transformers' tokenizer(text), puts any ids around the text:
  /// true when the file's post-processor adds some for one sequence (Llama 2's
  /// TemplateProcessing adds "<s>"), false when it adds none (Qwen3's ByteLevel,
  /// or no post-processor).
  bool adds_special_tokens_by_default() const;

  /// One more than the largest id the tokenizer gives (vocabulary and added tokens):
  /// every id is in [0, vocab_size()).
  std::int64_t vocab_size() const;

  /// SHA-256 of the tokenizer.json bytes, 64 lowercase hex digits; for a GGUF, of the
  /// compact JSON text of the document gguf_vocabulary.h builds from its metadata.
  const std::string& sha256() const;
  /// The tokenizer.json file read (the folder's file when a folder was given), or the GGUF.
  const std::string& path() const;

  /// True when any bytes can be encoded (see the header comment), false when
  /// only UTF-8 can.
  bool takes_any_bytes() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  static Tokenizer from_document(const nlohmann::json& document, const std::string& path, std::string sha256);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tqlab
