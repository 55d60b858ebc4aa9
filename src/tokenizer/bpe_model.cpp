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
constexpr std::string_view kMetaspace = "\u2581";

// Whether `token` holds "▁" right after a character that is not "▁".
bool joins_word_and_metaspace(std::string_view token) {
  for (std::size_t at = token.find(kMetaspace); at != std::string_view::npos; at = token.find(kMetaspace, at + 1)) {
    if (at > 0 && (at < kMetaspace.size() || token.substr(at - kMetaspace.size(), kMetaspace.size()) != kMetaspace)) {
      return true;
    }
  }
  return false;
}

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

bool BpeWordCache::append_if_known(std::string_view word, std::vector<std::int32_t>& out) const {
  const Ids* known = words_.find(word);
  if (known == nullptr) return false;
  out.insert(out.end(), ids_.begin() + known->offset, ids_.begin() + known->offset + known->count);
  return true;
}

void BpeWordCache::store(std::string_view word, std::span<const std::int32_t> ids) {
  if (word.size() >= kMaxWordBytes || words_.size() >= kMaxWords) return;
  words_.put(word, {static_cast<std::uint32_t>(ids_.size()), static_cast<std::uint32_t>(ids.size())});
  ids_.insert(ids_.end(), ids.begin(), ids.end());
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

  model.read_vocabulary(json.at("vocab"));
  model.read_merges(json.at("merges"));

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

void BpeModel::read_vocabulary(const JsonReader& vocabulary) {
  if (!vocabulary.is_object()) vocabulary.fail("expected an object of token: id, got {}", vocabulary.type_name());
  // An empty vocabulary would encode every text to no ids at all.
  if (vocabulary.value().empty()) vocabulary.fail("is empty: a BPE model needs at least one token");
  std::int64_t largest_id = -1;
  vocabulary_.reserve(vocabulary.value().size());
  std::vector<std::pair<std::string_view, std::int32_t>> entries;
  entries.reserve(vocabulary.value().size());
  for (const auto& [token, id_json] : vocabulary.value().items()) {
    if (!id_json.is_number_integer() || id_json.get<std::int64_t>() < 0 || id_json.get<std::int64_t>() > kMaxTokenId) {
      vocabulary.fail("token '{}' has id {}, expected an integer in [0, {}]", printable(token), id_json.dump(),
                      kMaxTokenId);
    }
    const auto id = id_json.get<std::int64_t>();
    vocabulary_.put(token, static_cast<std::int32_t>(id));
    entries.emplace_back(token, static_cast<std::int32_t>(id));
    largest_id = std::max(largest_id, id);
  }
  // Ids index a table: refuse a few tokens with ids in the billions rather than allocate gigabytes.
  if (largest_id >= 16 * static_cast<std::int64_t>(vocabulary_.size()) + 65536) {
    vocabulary.fail("ids run to {} for {} tokens: too sparse to be a vocabulary", largest_id, vocabulary_.size());
  }
  tokens_.resize(static_cast<std::size_t>(largest_id + 1));
  has_token_.resize(tokens_.size());
  char_ids_.assign(kDirectCodePoints, -1);
  for (const auto& [token, id] : entries) {
    char32_t code_point = 0;
    if (utf8_char_at(token, code_point) == token.size() && code_point < kDirectCodePoints) {
      char_ids_[code_point] = id;
    }
    if (has_token_[id]) {
      vocabulary.fail("tokens '{}' and '{}' have the same id {}", printable(tokens_[id]), printable(token), id);
    }
    tokens_[id] = token;
    has_token_[id] = true;
  }
}

void BpeModel::read_merges(const JsonReader& merges) {
  if (!merges.is_array()) merges.fail("expected an array of merges, got {}", merges.type_name());
  const nlohmann::json& merge_list = merges.value();
  merges_.reserve(merge_list.size());
  std::int32_t rank = 0;
  bool some_merge_joins_metaspace = false;
  for (std::size_t index = 0; index < merge_list.size(); ++index) {
    const nlohmann::json& merge = merge_list[index];
    if (merge.is_string() && merge.get_ref<const std::string&>().starts_with("#version")) continue;
    const auto [left, right] = merge_sides(merges, merge, index);
    const auto left_id = id_of(left);
    const auto right_id = id_of(right);
    const auto merged_id = id_of(left + right);
    if (!left_id || !right_id || !merged_id) {
      const std::string& missing = !left_id ? left : !right_id ? right : left + right;
      merges.fail("merge {} ('{}' '{}') names '{}', which is not in model.vocab", index, printable(left),
                  printable(right), printable(missing));
    }
    merges_.add(*left_id, *right_id, {rank++, *merged_id});
    some_merge_joins_metaspace = some_merge_joins_metaspace || joins_word_and_metaspace(left + right);
  }
  cut_before_metaspace_ = !some_merge_joins_metaspace && !ignore_merges_;
}

std::optional<std::int32_t> BpeModel::id_of(std::string_view text) const {
  const std::int32_t* id = vocabulary_.find(text);
  if (id == nullptr) return std::nullopt;
  return *id;
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
    char32_t code_point = 0;
    const std::size_t valid_length = utf8_char_at(piece.substr(at), code_point);
    const std::size_t length = valid_length == 0 ? 1 : valid_length;
    const std::string_view character = piece.substr(at, length);
    at += length;
    std::int32_t id = -1;
    if (valid_length != 0 && code_point < kDirectCodePoints) {
      id = char_ids_[code_point];
    } else if (const auto found = id_of(character)) {
      id = *found;
    }
    if (id >= 0) {
      if (unk_pending) symbols.push_back(*unk_id_);
      unk_pending = false;
      symbols.push_back(id);
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
  if (!cut_before_metaspace_) {
    tokenize_word(piece, cache, out);
    return;
  }
  std::size_t word_start = 0;
  for (std::size_t at = piece.find(kMetaspace, 1); at != std::string_view::npos;
       at = piece.find(kMetaspace, at + 1)) {
    // A cut where "▁" follows another character (a stray byte counts as one).
    if (at >= kMetaspace.size() && piece.substr(at - kMetaspace.size(), kMetaspace.size()) == kMetaspace) continue;
    tokenize_word(piece.substr(word_start, at - word_start), cache, out);
    word_start = at;
  }
  tokenize_word(piece.substr(word_start), cache, out);
}

void BpeModel::tokenize_word(std::string_view word, BpeWordCache& cache, std::vector<std::int32_t>& out) const {
  if (word.empty() || cache.append_if_known(word, out)) return;
  std::vector<std::int32_t> symbols;
  symbols.reserve(word.size());
  initial_symbols(word, symbols);
  merge_symbols(merges_, symbols);
  cache.store(word, symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

}  // namespace tqlab::tokenizer
