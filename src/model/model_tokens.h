// The token ids an end-to-end command runs a model on (`tqlab ppl`, `tqlab dump`,
// a sweep's "model" block), and where they came from, as results record it:
// a token file (model/token_file.h), or a text tokenized in C++ by the model's
// tokenizer.json (tokenizer/tokenizer.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace tqlab {

struct ModelTokens {
  std::vector<std::int32_t> ids;  ///< a text's: its first ids only, when the chunks need no more
  std::string source;             ///< "tokens" or "text"
  std::string path;               ///< the file read (a token file, or the text)
  std::string sha256;             ///< of that file's bytes
  // A token file: the tensor read ("" for .npy) and its element type.
  std::string tensor, dtype;
  // A text: the tokenizer.json, its sha256, and whether its special tokens were added.
  std::string tokenizer_path, tokenizer_sha256;
  bool add_special = false;
};

/// The ids of token file `spec` ("FILE.npy", "FILE.safetensors:NAME"), each below the
/// model's vocabulary. InputError naming `option` and the file (model/token_file.h).
ModelTokens read_model_tokens(const std::string& spec, const ModelConfig& config, const std::string& option);

/// The ids of text file `path` by `tokenizer` (a tokenizer.json or a folder holding one),
/// with its special tokens when `add_special` (nullopt: the tokenizer's own default,
/// Hugging Face's). Only the first `max_ids` ids are made when the text has more
/// (Tokenizer::encode: the same ids as the whole text's first ones); the sha256 is
/// still the whole file's. InputError naming `option` and the file for an empty text,
/// a text the tokenizer cannot take, or an id past the model's vocabulary (tokenizer
/// and model do not belong together).
ModelTokens tokenize_model_text(const std::string& path, const std::string& tokenizer, std::optional<bool> add_special,
                                const ModelConfig& config, const std::string& option,
                                std::size_t max_ids = Tokenizer::kAllIds);

/// How many ids `chunks` chunks of `ctx` tokens read: chunks x ctx, or every id
/// (Tokenizer::kAllIds) for chunks 0 ("every whole chunk") or values plan_chunks refuses.
std::size_t ids_for_chunks(int ctx, int chunks);

}  // namespace tqlab
