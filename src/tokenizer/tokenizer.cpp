// Loading a tokenizer.json and running its pipeline (tokenizer.h).
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "core/sha256.h"
#include "core/text.h"
#include "io/gguf.h"
#include "io/json_reader.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/gguf_vocabulary.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"

namespace tqlab {

using tokenizer::AddedToken;
using tokenizer::AddedTokenMatcher;
using tokenizer::BpeModel;
using tokenizer::BpeWordCache;
using tokenizer::TextSegment;

struct Tokenizer::Impl {
  std::string path;
  std::string sha256;
  BpeModel model;
  std::unique_ptr<tokenizer::Normalizer> normalizer;
  std::unique_ptr<tokenizer::PreTokenizer> pre_tokenizer;
  std::unique_ptr<tokenizer::Decoder> decoder;
  tokenizer::SpecialTokenFrame special_frame;
  std::unique_ptr<AddedTokenMatcher> raw_matcher;                  ///< added tokens with normalized false
  std::unique_ptr<AddedTokenMatcher> normalized_matcher;           ///< added tokens with normalized true
  std::unordered_map<std::int32_t, std::string> added_token_text;  ///< id -> what decoding gives
  std::unordered_set<std::string> special_texts;
  std::int64_t id_limit = 0;
  bool takes_any_bytes = false;

  // Steps 2-4 of tokenizer.h on one stretch between raw-matched added tokens.
  // Stops after the piece whose ids reach `max_ids` (tokenizer.h, encode).
  void encode_stretch(std::string_view stretch, bool starts_input, BpeWordCache& cache, std::size_t max_ids,
                      std::vector<std::int32_t>& ids) const;
};

namespace {

constexpr std::string_view kKind = "tokenizer";

std::string resolve_path(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    const std::string file = (std::filesystem::path(path) / "tokenizer.json").string();
    if (!std::filesystem::exists(file, error)) fail("tokenizer folder '{}' holds no tokenizer.json", path);
    return file;
  }
  return path;
}

// True when `path` is a regular file starting with the GGUF magic (as model/weight_source.cpp tells them).
bool is_gguf_file(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  const MappedFile file(path);
  std::byte magic[4] = {};
  if (file.size() < sizeof magic) return false;
  file.read(0, magic);
  return looks_like_gguf(magic, sizeof magic);
}

bool is_null_or_absent(const JsonReader& json, std::string_view key) {
  const auto value = json.find(key);
  return !value || value->value().is_null();
}

std::vector<AddedToken> read_added_tokens(const JsonReader& root, const BpeModel& model) {
  std::vector<AddedToken> tokens;
  const auto list = root.find("added_tokens");
  if (!list) return tokens;
  // Ids as Hugging Face assigns them (added_tokens.h): the vocabulary's, else the next free one.
  auto next_id = static_cast<std::int64_t>(model.vocabulary_size());
  std::unordered_map<std::string, std::size_t> index_of;
  for (const JsonReader& entry : list->elements()) {
    entry.allow_only({"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    AddedToken token;
    token.content = entry.at("content").as_string();
    const std::int64_t file_id = entry.at("id").as_integer(0, (std::int64_t{1} << 31) - 1);
    auto flag = [&](std::string_view key, bool fallback) {
      const auto value = entry.find(key);
      return value ? value->as_bool() : fallback;
    };
    token.special = flag("special", false);
    token.single_word = flag("single_word", false);
    token.lstrip = flag("lstrip", false);
    token.rstrip = flag("rstrip", false);
    token.normalized = flag("normalized", !token.special);
    if (token.content.empty()) continue;  // Hugging Face ignores them
    if (const auto known = index_of.find(token.content); known != index_of.end()) {
      token.id = tokens[known->second].id;  // the same string again: its properties change, not its id
      tokens[known->second] = token;
      continue;
    }
    if (const auto id = model.id_of(token.content)) {
      token.id = *id;
    } else {
      token.id = static_cast<std::int32_t>(next_id++);
    }
    if (token.id != file_id) {
      log::warn(
          "tokenizer '{}': added token '{}' has id {} in the file but {} by the rules Hugging Face "
          "applies (the model vocabulary's id, else the next free one); using {}",
          root.file(), printable(token.content), file_id, token.id, token.id);
    }
    index_of.emplace(token.content, tokens.size());
    tokens.push_back(std::move(token));
  }
  return tokens;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  if (is_gguf_file(path)) {
    // The embedded tokenizer as the tokenizer.json it stands for; its sha256 is that document's (compact
    // JSON text), which changes with the tokenizer and not with the weights, and costs no pass over the file.
    const nlohmann::json document = tokenizer::gguf_tokenizer_document(*GgufFile::open(path));
    return from_document(document, path, bytes_sha256(document.dump()));
  }
  const std::string file = resolve_path(path);
  const nlohmann::json document = read_json_file(file, kKind);
  return from_document(document, file, file_sha256(file));
}

Tokenizer Tokenizer::parse(std::string_view json_text, const std::string& name) {
  return from_document(parse_json_text(json_text, name, kKind), name, bytes_sha256(json_text));
}

Tokenizer Tokenizer::from_document(const nlohmann::json& document, const std::string& path, std::string sha256) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->sha256 = std::move(sha256);
  const JsonReader root(document, impl->path, "", std::string(kKind));
  if (!root.is_object()) root.fail("expected a JSON object, got {}", root.type_name());
  root.allow_only({"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
                   "decoder", "model"});
  if (const auto version = root.find("version"); version && version->as_string() != "1.0") {
    version->fail("version '{}' is not supported (supported: 1.0)", version->as_string());
  }
  for (const char* ignored : {"truncation", "padding"}) {
    if (!is_null_or_absent(root, ignored)) {
      log::debug("tokenizer '{}': {} is ignored: tqlab encodes the whole text", impl->path, ignored);
    }
  }

  const JsonReader model = root.at("model");
  const auto model_type = model.find("type");
  if (!model_type) model.fail("has no \"type\" (supported: BPE)");
  if (model_type->as_string() != "BPE") {
    model_type->fail("model type '{}' is not supported (supported: BPE)", model_type->as_string());
  }
  impl->model = BpeModel::from_json(model);
  if (!is_null_or_absent(root, "normalizer")) impl->normalizer = tokenizer::make_normalizer(root.at("normalizer"));
  if (!is_null_or_absent(root, "pre_tokenizer")) {
    impl->pre_tokenizer = tokenizer::make_pre_tokenizer(root.at("pre_tokenizer"));
  }
  if (!is_null_or_absent(root, "post_processor")) {
    impl->special_frame = tokenizer::read_post_processor(root.at("post_processor"));
  }
  if (!is_null_or_absent(root, "decoder")) impl->decoder = tokenizer::make_decoder(root.at("decoder"));

  std::vector<AddedToken> raw_tokens, normalized_tokens;
  std::vector<std::string> raw_patterns, normalized_patterns;
  impl->id_limit = impl->model.id_limit();
  for (AddedToken& token : read_added_tokens(root, impl->model)) {
    impl->id_limit = std::max<std::int64_t>(impl->id_limit, std::int64_t{token.id} + 1);
    std::string text = token.content;
    if (token.normalized && impl->normalizer) impl->normalizer->normalize(text);
    impl->added_token_text[token.id] = text;
    if (token.special) impl->special_texts.insert(token.content);
    if (token.normalized) {
      normalized_patterns.push_back(std::move(text));
      normalized_tokens.push_back(std::move(token));
    } else {
      raw_patterns.push_back(std::move(text));
      raw_tokens.push_back(std::move(token));
    }
  }
  impl->raw_matcher = std::make_unique<AddedTokenMatcher>(std::move(raw_tokens), std::move(raw_patterns));
  impl->normalized_matcher =
      std::make_unique<AddedTokenMatcher>(std::move(normalized_tokens), std::move(normalized_patterns));
  impl->takes_any_bytes =
      (impl->pre_tokenizer && impl->pre_tokenizer->writes_byte_level()) || impl->model.falls_back_on_every_byte();
  for (const auto& side : {impl->special_frame.before, impl->special_frame.after}) {
    for (const std::int32_t id : side) {
      if (id >= impl->id_limit) {
        root.at("post_processor").fail("adds id {}, beyond the vocabulary's {} ids", id, impl->id_limit);
      }
    }
  }
  return Tokenizer(std::move(impl));
}

void Tokenizer::Impl::encode_stretch(std::string_view stretch, bool starts_input, BpeWordCache& cache,
                                     std::size_t max_ids, std::vector<std::int32_t>& ids) const {
  std::string text(stretch);
  if (normalizer) normalizer->normalize(text);
  const std::vector<TextSegment> segments =
      normalized_matcher->empty() ? std::vector<TextSegment>{{0, text.size(), -1}} : normalized_matcher->split(text);
  bool first = true;
  for (const TextSegment& segment : segments) {
    if (ids.size() >= max_ids) return;
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
    } else if (segment.end > segment.begin) {
      tokenizer::Pieces pieces{text.substr(segment.begin, segment.end - segment.begin)};
      if (pre_tokenizer) pre_tokenizer->pre_tokenize(pieces, starts_input && first);
      for (const std::string& piece : pieces) {
        if (ids.size() >= max_ids) return;
        model.tokenize(piece, cache, ids);
      }
    }
    first = false;
  }
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text_bytes, bool add_special_tokens,
                                            const EncodeProgress& progress, std::size_t max_ids) const {
  const Impl& impl = *impl_;
  if (!impl.takes_any_bytes) {
    if (const std::size_t bad = invalid_utf8_offset(text_bytes); bad != std::string_view::npos) {
      fail(
          "not UTF-8 (byte {} at offset {}), and tokenizer '{}' takes only UTF-8: it has neither a "
          "ByteLevel pre-tokenizer nor a byte_fallback token for every byte",
          printable(text_bytes.substr(bad, 1)), bad, impl.path);
    }
  }
  std::vector<std::int32_t> ids;
  ids.reserve(std::min(text_bytes.size() / 3 + 16, max_ids));
  if (add_special_tokens) ids = impl.special_frame.before;
  BpeWordCache cache;
  const std::vector<TextSegment> segments = impl.raw_matcher->empty()
                                                ? std::vector<TextSegment>{{0, text_bytes.size(), -1}}
                                                : impl.raw_matcher->split(text_bytes);
  // Progress between stretches only: cutting a stretch could change its tokens
  // (a piece or a normalization may span the cut), so a text without added
  // tokens reports at its end.
  std::size_t reported = 0;
  for (const TextSegment& segment : segments) {
    if (ids.size() >= max_ids) break;
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
    } else {
      impl.encode_stretch(text_bytes.substr(segment.begin, segment.end - segment.begin), segment.begin == 0, cache,
                          max_ids, ids);
    }
    if (progress && segment.end - reported >= (1u << 20)) {
      progress(segment.end, text_bytes.size());
      reported = segment.end;
    }
  }
  if (add_special_tokens && ids.size() < max_ids) {
    ids.insert(ids.end(), impl.special_frame.after.begin(), impl.special_frame.after.end());
  }
  if (ids.size() > max_ids) ids.resize(max_ids);
  if (progress) progress(text_bytes.size(), text_bytes.size());
  return ids;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skip_special_tokens) const {
  const Impl& impl = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    const std::string* text = nullptr;
    if (const auto added = impl.added_token_text.find(id); added != impl.added_token_text.end()) {
      text = &added->second;
    } else {
      text = impl.model.token_of(id);
    }
    if (text == nullptr) {
      fail("id {} (at position {}) is no token of tokenizer '{}' (its ids run from 0 to {})", id, i, impl.path,
           impl.id_limit - 1);
    }
    if (skip_special_tokens && impl.special_texts.contains(*text)) continue;
    tokens.push_back(*text);
  }
  return tokenizer::decode_tokens(impl.decoder.get(), std::move(tokens));
}

bool Tokenizer::adds_special_tokens_by_default() const { return !impl_->special_frame.empty(); }
std::int64_t Tokenizer::vocab_size() const { return impl_->id_limit; }
const std::string& Tokenizer::sha256() const { return impl_->sha256; }
const std::string& Tokenizer::path() const { return impl_->path; }
bool Tokenizer::takes_any_bytes() const { return impl_->takes_any_bytes; }

}  // namespace tqlab
