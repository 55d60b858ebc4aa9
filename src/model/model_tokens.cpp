#include "model/model_tokens.h"

#include <string_view>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/sha256.h"
#include "core/text.h"
#include "model/token_file.h"

namespace tqlab {

ModelTokens read_model_tokens(const std::string& spec, const ModelConfig& config, const std::string& option) {
  TokenIds read = read_token_ids(spec, config.vocab_size, option.c_str());
  ModelTokens out;
  out.source = "tokens";
  out.ids = std::move(read.ids);
  out.path = read.path;
  out.tensor = read.tensor;
  out.dtype = read.dtype;
  out.sha256 = file_sha256(read.path);
  return out;
}

ModelTokens tokenize_model_text(const std::string& path, const std::string& tokenizer_path,
                                std::optional<bool> add_special, const ModelConfig& config, const std::string& option,
                                std::size_t max_ids) {
  const Tokenizer tokenizer = Tokenizer::load(tokenizer_path);
  const MappedFile text_file(path);  // encoded from the map: no copy of a long text
  const std::string_view text(reinterpret_cast<const char*>(text_file.bytes().data()), text_file.bytes().size());
  if (text.empty()) fail("{} '{}' is empty: there is nothing to tokenize", option, printable(path));
  ModelTokens out;
  out.source = "text";
  out.path = path;
  out.sha256 = file_sha256(path);
  out.tokenizer_path = tokenizer.path();
  out.tokenizer_sha256 = tokenizer.sha256();
  out.add_special = add_special.value_or(tokenizer.adds_special_tokens_by_default());
  try {
    out.ids = tokenizer.encode(text, out.add_special, {}, max_ids);
  } catch (const InputError& error) {
    fail("{} '{}': {}", option, printable(path), error.what());
  }
  for (std::size_t i = 0; i < out.ids.size(); ++i) {
    if (out.ids[i] >= config.vocab_size) {
      fail(
          "{} '{}': the tokenizer '{}' gives id {} (token {} of {}), past the vocabulary of '{}' (vocab_size {}): "
          "the tokenizer is not this model's",
          option, printable(path), printable(out.tokenizer_path), out.ids[i], i, out.ids.size(), config.path,
          config.vocab_size);
    }
  }
  return out;
}

std::size_t ids_for_chunks(int ctx, int chunks) {
  if (ctx <= 0 || chunks <= 0) return Tokenizer::kAllIds;
  return static_cast<std::size_t>(ctx) * static_cast<std::size_t>(chunks);
}

}  // namespace tqlab
