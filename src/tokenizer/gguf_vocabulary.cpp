// A GGUF's tokenizer.ggml.* metadata as a tokenizer.json document (gguf_vocabulary.h).
#include "tokenizer/gguf_vocabulary.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "io/gguf.h"

namespace tqlab::tokenizer {

namespace {

using nlohmann::json;

// llama_token_type (llama.cpp include/llama.h), as tokenizer.ggml.token_type stores it.
constexpr std::int64_t kControl = 3;
constexpr std::int64_t kUserDefined = 4;
constexpr std::int64_t kUnknown = 2;
constexpr std::int64_t kByte = 6;

// Tokens llama.cpp makes CONTROL by their text whatever token_type says (llama_vocab::impl::load, "auto-detect
// special tokens by text" and the end-of-generation list): a role's texts count only when the file does not
// name that role's token by its key ("" : always).
struct ControlByText {
  const char* key;
  std::vector<std::string_view> texts;
};

const std::vector<ControlByText>& control_by_text() {
  static const std::vector<ControlByText> table = {
      {"tokenizer.ggml.eot_token_id",
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
        "[EOT]", "<\uff5cend\u2581of\u2581sentence\uff5c>", "<end_of_utterance>"}},
      {"tokenizer.ggml.eom_token_id", {"<|eom_id|>"}},
      {"tokenizer.ggml.fim_pre_token_id",
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\uff5cfim\u2581begin\uff5c>", "<PRE>",
        "\u2581<PRE>", "<|code_prefix|>", "<|prefix|>"}},
      {"tokenizer.ggml.fim_suf_token_id",
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\uff5cfim\u2581hole\uff5c>", "<SUF>",
        "\u2581<SUF>", "<|code_suffix|>", "<|suffix|>"}},
      {"tokenizer.ggml.fim_mid_token_id",
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\uff5cfim\u2581end\uff5c>", "<MID>",
        "\u2581<MID>", "<|code_middle|>", "<|middle|>"}},
      {"tokenizer.ggml.fim_pad_token_id", {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
      {"tokenizer.ggml.fim_rep_token_id", {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {"tokenizer.ggml.fim_sep_token_id", {"<|file_sep|>"}},
      {"",
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
        "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
        "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<\uff5cend\u2581of\u2581sentence\uff5c>", "[e~["}},
  };
  return table;
}

bool is_control_by_text(const GgufFile& file, std::string_view text) {
  for (const ControlByText& role : control_by_text()) {
    if (*role.key != '\0' && file.find(role.key) != nullptr) continue;
    if (std::find(role.texts.begin(), role.texts.end(), text) != role.texts.end()) return true;
  }
  return false;
}

// The regexes llm_tokenizer_bpe's constructor (llama-vocab.cpp) gives each supported pre-tokenizer
// name, in the order llama.cpp applies them (each one cuts the pieces the previous one left).
struct PreTokenizerRegexes {
  const char* name;
  std::vector<const char*> regexes;
  bool adds_bos;  ///< llama.cpp's add_bos when tokenizer.ggml.add_bos_token is absent
};

const std::vector<PreTokenizerRegexes>& pre_tokenizer_table() {
  static const std::vector<PreTokenizerRegexes> table = {
      {"default",
       {"[\\p{P}\\$\\+<=>\\^~\\|]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
        "\\p{N}+", "[0-9][0-9][0-9]"},
       false},
      {"gpt-2", {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, false},
      {"llama-bpe",
       {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?"
        "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true},
      {"qwen2",
       {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
        "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       false},
  };
  return table;
}

const PreTokenizerRegexes& find_pre_tokenizer(const GgufFile& file, std::string_view name) {
  // Other names llama.cpp maps to the same regexes (llama_vocab::impl::load).
  if (name == "llama3" || name == "llama-v3") name = "llama-bpe";
  std::string supported;
  for (const PreTokenizerRegexes& entry : pre_tokenizer_table()) {
    if (entry.name == name) return entry;
    supported += supported.empty() ? "" : ", ";
    supported += entry.name;
  }
  fail("{}: metadata tokenizer.ggml.pre is '{}', a pre-tokenizer tqlab does not know (supported: {}, "
       "llama3, llama-v3)",
       file.where(), printable(name), supported);
}

std::vector<std::string> string_array(const GgufFile& file, const char* key, bool required) {
  const GgufValue* value = file.get_array(key, GgufType::string);
  if (value == nullptr) {
    if (required) fail("{}: metadata {} is absent; a GGUF tokenizer needs it", file.where(), key);
    return {};
  }
  return {value->strings.begin(), value->strings.end()};
}

// A per-token array (scores, token types) of `count` numbers, or empty when absent and not required.
const GgufValue* per_token_array(const GgufFile& file, const char* key, std::size_t count, bool required) {
  const GgufValue* value = file.find(key);
  if (value == nullptr) {
    if (required) fail("{}: metadata {} is absent; a GGUF tokenizer of this model needs it", file.where(), key);
    return nullptr;
  }
  if (!value->is_array() || !value->is_number()) {
    fail("{}: metadata {} is {}; expected an array of numbers, one per token", file.where(), key,
         describe_gguf_value(*value, 2));
  }
  if (value->count != count) {
    fail("{}: metadata {} has {} elements but tokenizer.ggml.tokens has {}", file.where(), key, value->count, count);
  }
  return value;
}

std::optional<std::int32_t> token_id(const GgufFile& file, const char* key, std::size_t count) {
  const auto id = file.get_integer(key);
  if (!id) return std::nullopt;
  if (*id < 0 || static_cast<std::uint64_t>(*id) >= count) {
    fail("{}: metadata {} is {}, not one of the {} tokens' ids", file.where(), key, *id, count);
  }
  return static_cast<std::int32_t>(*id);
}

json split_step(const char* regex) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

// SentencePiece's scores as BPE merges: every split of a token into two tokens, ranked by the joined
// token's score, highest first (llm_tokenizer_spm_session merges the best-scoring bigram first; ties go to
// the lower id here, to the leftmost pair in llama.cpp). Byte tokens take no part, as in llama.cpp their
// text "<0xXX>" is never formed from pieces of the text.
json merges_from_scores(const std::vector<std::string>& tokens, const GgufValue& scores, const GgufValue* types,
                        const std::unordered_map<std::string_view, std::int32_t>& id_of) {
  struct Merge {
    float score;
    std::int32_t id;
    std::size_t cut;
  };
  std::vector<Merge> merges;
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    if (types != nullptr && types->as_signed(id) == kByte) continue;
    const std::string& text = tokens[id];
    for (std::size_t cut = 1; cut < text.size(); ++cut) {
      if ((static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
      const std::string_view view(text);
      if (id_of.contains(view.substr(0, cut)) && id_of.contains(view.substr(cut))) {
        merges.push_back({static_cast<float>(scores.as_double(id)), static_cast<std::int32_t>(id), cut});
      }
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    return a.score != b.score ? a.score > b.score : a.id < b.id;
  });
  json out = json::array();
  for (const Merge& merge : merges) {
    const std::string& text = tokens[static_cast<std::size_t>(merge.id)];
    out.push_back(json::array({text.substr(0, merge.cut), text.substr(merge.cut)}));
  }
  return out;
}

// Whether tokenizer.ggml.model names a byte-level BPE ("gpt2") rather than a SentencePiece one ("llama").
bool byte_level_model(const GgufFile& file) {
  const auto model_name = file.get_string("tokenizer.ggml.model");
  if (!model_name) fail("{}: metadata tokenizer.ggml.model is absent; the file embeds no tokenizer", file.where());
  const bool byte_level = *model_name == "gpt2";
  if (!byte_level && *model_name != "llama") {
    fail("{}: metadata tokenizer.ggml.model is '{}', a tokenizer tqlab does not read (supported: gpt2, llama)",
         file.where(), printable(*model_name));
  }
  return byte_level;
}

// tokenizer.ggml.token_type, `count` integers (llama_token_type), or null when absent.
const GgufValue* token_types(const GgufFile& file, std::size_t count) {
  const GgufValue* types = per_token_array(file, "tokenizer.ggml.token_type", count, false);
  if (types != nullptr && !types->is_integer()) {
    fail("{}: metadata tokenizer.ggml.token_type is {}; expected an array of integers", file.where(),
         describe_gguf_value(*types, 2));
  }
  return types;
}

// The vocabulary as tokenizer.json has it, {"token text": id}, with each token's id put into `id_of`
// (whose keys view `tokens`); a token held twice is refused.
json vocabulary(const GgufFile& file, const std::vector<std::string>& tokens,
                std::unordered_map<std::string_view, std::int32_t>& id_of) {
  json vocab = json::object();
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    if (!id_of.emplace(tokens[id], static_cast<std::int32_t>(id)).second) {
      fail("{}: metadata tokenizer.ggml.tokens holds '{}' twice (ids {} and {})", file.where(),
           printable(tokens[id]), id_of.at(tokens[id]), id);
    }
    vocab[tokens[id]] = id;
  }
  return vocab;
}

// tokenizer.ggml.merges ("LEFT RIGHT" texts) as tokenizer.json's [["LEFT", "RIGHT"], ...], once both sides and
// their join are tokens.
json byte_level_merges(const GgufFile& file, const std::unordered_map<std::string_view, std::int32_t>& id_of) {
  const std::vector<std::string> merge_texts = string_array(file, "tokenizer.ggml.merges", true);
  json merges = json::array();
  for (std::size_t i = 0; i < merge_texts.size(); ++i) {
    const std::string& text = merge_texts[i];
    const std::size_t space = text.find(' ', 1);
    const std::string left = text.substr(0, space), right = space == std::string::npos ? "" : text.substr(space + 1);
    if (space == std::string::npos || !id_of.contains(left) || !id_of.contains(right) ||
        !id_of.contains(left + right)) {
      fail("{}: metadata tokenizer.ggml.merges[{}] is '{}'; expected \"LEFT RIGHT\", both sides and their "
           "join tokens of tokenizer.ggml.tokens",
           file.where(), i, printable(text));
    }
    merges.push_back(json::array({left, right}));
  }
  return merges;
}

// A byte-level BPE's merges and ignore_merges (into `model`), pre-tokenizer and decoder (into `document`);
// returns whether its pre-tokenizer adds a BOS token by default.
bool add_byte_level_parts(const GgufFile& file, const std::unordered_map<std::string_view, std::int32_t>& id_of,
                          json& model, json& document) {
  model["merges"] = byte_level_merges(file, id_of);
  const std::string pre_name(file.get_string("tokenizer.ggml.pre").value_or("default"));
  const PreTokenizerRegexes& pre = find_pre_tokenizer(file, pre_name);
  // llama-bpe reads whole words from the vocabulary before merging (llama.cpp's ignore_merges).
  model["ignore_merges"] = std::string_view(pre.name) == "llama-bpe";
  json steps = json::array();
  for (const char* regex : pre.regexes) steps.push_back(split_step(regex));
  steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}});
  document["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", steps}};
  document["decoder"] = {{"type", "ByteLevel"}};
  return pre.adds_bos;
}

// A SentencePiece model's merges (from its scores) and unknown token (into `model`), normalizer and decoder
// (into `document`).
void add_sentencepiece_parts(const GgufFile& file, const std::vector<std::string>& tokens, const GgufValue* types,
                             const std::unordered_map<std::string_view, std::int32_t>& id_of, json& model,
                             json& document) {
  const std::size_t count = tokens.size();
  const GgufValue* scores = per_token_array(file, "tokenizer.ggml.scores", count, true);
  model["merges"] = merges_from_scores(tokens, *scores, types, id_of);
  // llama.cpp: a space before the text when add_space_prefix (default true), and every space as U+2581.
  json steps = json::array();
  if (file.get_bool("tokenizer.ggml.add_space_prefix").value_or(true)) {
    steps.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
  }
  steps.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
  document["normalizer"] = {{"type", "Sequence"}, {"normalizers", steps}};
  json decode_steps = json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                   {{"type", "ByteFallback"}},
                                   {{"type", "Fuse"}}});
  if (file.get_bool("tokenizer.ggml.add_space_prefix").value_or(true)) {
    decode_steps.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  }
  document["decoder"] = {{"type", "Sequence"}, {"decoders", decode_steps}};
  if (const auto unk = token_id(file, "tokenizer.ggml.unknown_token_id", count)) {
    model["unk_token"] = tokens[static_cast<std::size_t>(*unk)];
  }
}

// The tokens llama.cpp looks for in the text before BPE (its cache_special_tokens: control, user-defined
// and unknown tokens), as tokenizer.json's added_tokens; control and unknown ones are special (left out by
// decode with --skip-special).
json added_tokens(const GgufFile& file, const std::vector<std::string>& tokens, const GgufValue* types) {
  json added = json::array();
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    const std::int64_t type = types != nullptr ? types->as_signed(id) : 1;
    const bool control = type == kControl || type == kUnknown || is_control_by_text(file, tokens[id]);
    if (!control && type != kUserDefined) continue;
    added.push_back({{"id", id}, {"content", tokens[id]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", control}});
  }
  return added;
}

// The TemplateProcessing post-processor: BOS (when tokenizer.ggml.add_bos_token, default `add_bos`), the text,
// and EOS (when tokenizer.ggml.add_eos_token, default false).
json post_processor(const GgufFile& file, const std::vector<std::string>& tokens, bool add_bos) {
  add_bos = file.get_bool("tokenizer.ggml.add_bos_token").value_or(add_bos);
  const bool add_eos = file.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  json single = json::array();
  json specials = json::object();
  auto special = [&](const char* key, const char* what) {
    const auto id = token_id(file, key, tokens.size());
    if (!id) fail("{}: metadata {} is absent but {} is true", file.where(), key, what);
    const std::string& text = tokens[static_cast<std::size_t>(*id)];
    specials[text] = {{"id", text}, {"ids", json::array({*id})}, {"tokens", json::array({text})}};
    single.push_back({{"SpecialToken", {{"id", text}, {"type_id", 0}}}});
  };
  if (add_bos) special("tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token");
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (add_eos) special("tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_eos_token");
  return {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
}

}  // namespace

nlohmann::json gguf_tokenizer_document(const GgufFile& file) {
  const bool byte_level = byte_level_model(file);
  const std::vector<std::string> tokens = string_array(file, "tokenizer.ggml.tokens", true);
  if (tokens.empty()) fail("{}: metadata tokenizer.ggml.tokens is empty", file.where());
  const GgufValue* types = token_types(file, tokens.size());
  std::unordered_map<std::string_view, std::int32_t> id_of;  // views into `tokens`
  json vocab = vocabulary(file, tokens, id_of);

  json model = {{"type", "BPE"}, {"vocab", vocab}, {"fuse_unk", !byte_level}, {"byte_fallback", !byte_level}};
  json document = {{"version", "1.0"}, {"model", json::object()}};
  bool add_bos = !byte_level;  // llama.cpp: true for SPM; gpt2 by the pre-tokenizer
  if (byte_level) {
    add_bos = add_byte_level_parts(file, id_of, model, document);
  } else {
    add_sentencepiece_parts(file, tokens, types, id_of, model, document);
  }
  document["model"] = std::move(model);
  document["added_tokens"] = added_tokens(file, tokens, types);
  document["post_processor"] = post_processor(file, tokens, add_bos);
  return document;
}

}  // namespace tqlab::tokenizer
