// The tokenizer a GGUF file embeds (its tokenizer.ggml.* metadata), turned into
// the tokenizer.json document Hugging Face would hold for the same vocabulary,
// so that a GGUF tokenizer runs through the one pipeline of tokenizer.h.
//
// What llama.cpp reads (src/llama-vocab.cpp, llama_vocab::impl::load) and what
// each part becomes here:
//   tokenizer.ggml.model   "gpt2": byte-level BPE; "llama": SentencePiece-style BPE
//                          with byte fallback; anything else refused, naming it.
//   tokenizer.ggml.tokens  array of strings: token i's text (the vocabulary).
//   tokenizer.ggml.merges  gpt2: array of strings "LEFT RIGHT", highest priority first.
//   tokenizer.ggml.scores  llama: array of f32, one per token; the pieces whose
//                          joined text has the highest score merge first
//                          (llm_tokenizer_spm_session::tokenize), written here as
//                          merges ranked by that score.
//   tokenizer.ggml.token_type  array of i32, one per token (llama_token_type):
//                          1 normal, 2 unknown, 3 control, 4 user-defined,
//                          5 unused, 6 byte. Control and user-defined tokens
//                          become added tokens, found in the text before BPE
//                          (llama.cpp's tokenizer_st_partition with
//                          parse_special, as llama-tokenize runs by default).
//   tokenizer.ggml.pre     gpt2: the pre-tokenizer's name; `default` (also when
//                          absent), `gpt-2`, `llama-bpe` (`llama3`, `llama-v3`),
//                          `qwen2`: the regexes llm_tokenizer_bpe's constructor
//                          gives that name, applied one after the other.
//   tokenizer.ggml.bos_token_id, add_bos_token, add_eos_token, eos_token_id,
//   unknown_token_id, add_space_prefix: as llama.cpp applies them; when
//   add_bos_token is absent llama.cpp adds BOS for `llama` and for gpt2 with
//   `llama-bpe`, not for other gpt2 vocabularies; add_space_prefix defaults
//   to true for `llama`.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace tqlab {

class GgufFile;

namespace tokenizer {

/// The tokenizer.json document standing for `file`'s embedded tokenizer.
/// InputError "GGUF 'FILE': metadata KEY ..." naming the key and what was
/// expected for a missing or malformed key, lengths that disagree, a merge
/// naming an unknown token, or an unsupported model or pre-tokenizer name
/// (listing the supported ones).
nlohmann::json gguf_tokenizer_document(const GgufFile& file);

}  // namespace tokenizer
}  // namespace tqlab
