// The BPE model of bpe_model.h.
#include "tokenizer/bpe_model.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "io/json_reader.h"
#include "tokenizer/unicode_text.h"

namespace tqlab::tokenizer {
namespace {

constexpr std::int64_t kMaxTokenId = (std::int64_t{1} << 31) - 1;

// The optional string member `key` ("" and null both mean none).
std::string optional_string(const JsonReader& json, std::string_view key) {
  const auto value = json.find(key);
  return value && !value->value().is_null() ? value->as_string() : std::string();
}

bool optional_bool(const JsonReader& json, std::string_view key) {
  const auto value = json.find(key);
  return value && !value->value().is_null() && value->as_bool();
}

// The two sides of merge `index`: "a b" or ["a", "b"].
std::pair<std::string, std::string> merge_sides(const JsonReader& merges, const nlohmann::json& merge,
                                                std::size_t index) {
  if (merge.is_string()) {
    const auto& line = merge.get_ref<const std::string&>();
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      merges.fail("merge {} ('{}') is not two tokens separated by one space", index, printable(line));
    }
    return {line.substr(0, space), line.substr(space + 1)};
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
    return {merge[0].get<std::string>(), merge[1].get<std::string>()};
  }
  merges.fail("merge {} is neither a string \"a b\" nor a pair [\"a\", \"b\"]", index);
}

}  // namespace

const std::vector<std::int32_t>* BpeWordCache::find(std::string_view word) const {
  const auto it = words_.find(word);
  return it == words_.end() ? nullptr : &it->second;
}

void BpeWordCache::store(std::string_view word, const std::vector<std::int32_t>& ids) {
  if (word.size() >= kMaxWordBytes || words_.size() >= kMaxWords) return;
  words_.emplace(std::string(word), ids);
}

BpeModel BpeModel::from_json(const JsonReader& json) {
  json.allow_only({"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                   "byte_fallback", "ignore_merges", "vocab", "merges"});
  BpeModel model;
  if (const auto dropout = json.find("dropout"); dropout && !dropout->value().is_null() && dropout->as_number() != 0) {
    dropout->fail("dropout {} is not supported: it makes tokenization random (training only); use null",
                  dropout->as_number());
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!optional_string(json, key).empty()) {
      json.at(key).fail("a non-empty {} is not supported (the Llama, Mistral and Qwen families have none)", key);
    }
  }
  model.fuse_unk_ = optional_bool(json, "fuse_unk");
  model.byte_fallback_ = optional_bool(json, "byte_fallback");
  model.ignore_merges_ = optional_bool(json, "ignore_merges");

  const JsonReader vocabulary = json.at("vocab");
  if (!vocabulary.is_object()) vocabulary.fail("expected an object of token: id, got {}", vocabulary.type_name());
  std::int64_t largest_id = -1;
  model.vocabulary_.reserve(vocabulary.value().size());
  for (const auto& [token, id_json] : vocabulary.value().items()) {
    if (!id_json.is_number_integer() || id_json.get<std::int64_t>() < 0 || id_json.get<std::int64_t>() > kMaxTokenId) {
      vocabulary.fail("token '{}' has id {}, expected an integer in [0, {}]", printable(token), id_json.dump(),
                      kMaxTokenId);
    }
    const auto id = id_json.get<std::int64_t>();
    model.vocabulary_.emplace(token, static_cast<std::int32_t>(id));
    largest_id = std::max(largest_id, id);
  }
  // Ids index a table: refuse a few tokens with ids in the billions rather than allocate gigabytes.
  if (largest_id >= 16 * static_cast<std::int64_t>(model.vocabulary_.size()) + 65536) {
    vocabulary.fail("ids run to {} for {} tokens: too sparse to be a vocabulary", largest_id,
                    model.vocabulary_.size());
  }
  model.tokens_.resize(static_cast<std::size_t>(largest_id + 1));
  model.has_token_.resize(model.tokens_.size());
  for (const auto& [token, id] : model.vocabulary_) {
    if (model.has_token_[id]) {
      vocabulary.fail("tokens '{}' and '{}' have the same id {}", printable(model.tokens_[id]), printable(token), id);
    }
    model.tokens_[id] = token;
    model.has_token_[id] = true;
  }

  const JsonReader merges = json.at("merges");
  if (!merges.is_array()) merges.fail("expected an array of merges, got {}", merges.type_name());
  const nlohmann::json& merge_list = merges.value();
  model.merges_.reserve(merge_list.size());
  std::int32_t rank = 0;
  for (std::size_t index = 0; index < merge_list.size(); ++index) {
    const nlohmann::json& merge = merge_list[index];
    if (merge.is_string() && merge.get_ref<const std::string&>().starts_with("#version")) continue;
    const auto [left, right] = merge_sides(merges, merge, index);
    const auto left_id = model.id_of(left);
    const auto right_id = model.id_of(right);
    const auto merged_id = model.id_of(left + right);
    if (!left_id || !right_id || !merged_id) {
      const std::string& missing = !left_id ? left : !right_id ? right : left + right;
      merges.fail("merge {} ('{}' '{}') names '{}', which is not in model.vocab", index, printable(left),
                  printable(right), printable(missing));
    }
    model.merges_.add(*left_id, *right_id, {rank++, *merged_id});
  }

  const std::string unk = optional_string(json, "unk_token");
  if (!unk.empty()) {
    model.unk_id_ = model.id_of(unk);
    if (!model.unk_id_) json.at("unk_token").fail("'{}' is not in model.vocab", printable(unk));
  }
  for (unsigned byte = 0; byte < 256; ++byte) {
    model.byte_ids_[byte] = model.id_of(fmt::format("<0x{:02X}>", byte)).value_or(-1);
  }
  return model;
}

std::optional<std::int32_t> BpeModel::id_of(std::string_view text) const {
  const auto it = vocabulary_.find(text);
  if (it == vocabulary_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::token_of(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size() || !has_token_[id]) return nullptr;
  return &tokens_[id];
}

bool BpeModel::falls_back_on_every_byte() const {
  if (!byte_fallback_) return false;
  for (const std::int32_t id : byte_ids_) {
    if (id < 0) return false;
  }
  return true;
}

void BpeModel::initial_symbols(std::string_view piece, std::vector<std::int32_t>& symbols) const {
  symbols.clear();
  // A run of unknown characters waiting to become one unk token (or several without fuse_unk).
  bool unk_pending = false;
  std::size_t at = 0;
  while (at < piece.size()) {
    const std::size_t length = char_or_byte_length(piece.substr(at));
    const std::string_view character = piece.substr(at, length);
    at += length;
    if (const auto id = id_of(character)) {
      if (unk_pending) symbols.push_back(*unk_id_);
      unk_pending = false;
      symbols.push_back(*id);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (const char byte : character) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(byte)] >= 0;
      if (all_bytes) {
        // As Hugging Face does, a pending unk is not flushed before byte tokens.
        for (const char byte : character) symbols.push_back(byte_ids_[static_cast<unsigned char>(byte)]);
        continue;
      }
    }
    if (!unk_id_) continue;  // dropped, as Hugging Face drops it
    if (unk_pending && !fuse_unk_) symbols.push_back(*unk_id_);
    unk_pending = true;
  }
  if (unk_pending) symbols.push_back(*unk_id_);
}

void BpeModel::tokenize(std::string_view piece, BpeWordCache& cache, std::vector<std::int32_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (const auto id = id_of(piece)) {
      out.push_back(*id);
      return;
    }
  }
  if (const std::vector<std::int32_t>* known = cache.find(piece)) {
    out.insert(out.end(), known->begin(), known->end());
    return;
  }
  std::vector<std::int32_t> symbols;
  symbols.reserve(piece.size());
  initial_symbols(piece, symbols);
  merge_symbols(merges_, symbols);
  cache.store(piece, symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

}  // namespace tqlab::tokenizer
