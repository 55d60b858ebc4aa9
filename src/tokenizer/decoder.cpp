// The decoders of decoder.h (tokenizers/src/decoders/ for the rules followed).
#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "io/json_reader.h"
#include "tokenizer/byte_level_alphabet.h"
#include "tokenizer/nesting.h"
#include "tokenizer/pattern_json.h"
#include "tokenizer/text_pattern.h"
#include "tokenizer/unicode_text.h"

namespace tqlab::tokenizer {
namespace {

std::string joined(const std::vector<std::string>& tokens, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) out += separator;
    out += tokens[i];
  }
  return out;
}

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      if (!append_bytes_of_byte_level(token, bytes)) bytes += token;
    }
    tokens.assign(1, std::move(bytes));
  }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(TextPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) token = pattern_.replace_all(token, content_);
  }

 private:
  TextPattern pattern_;
  std::string content_;
};

// The byte a "<0xXX>" token stands for, or -1.
int fallback_byte(const std::string& token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token[5] != '>') return -1;
  int value = 0;
  for (const char c : token.substr(3, 2)) {
    value *= 16;
    if (c >= '0' && c <= '9') {
      value += c - '0';
    } else if (c >= 'A' && c <= 'F') {
      value += c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      value += c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return value;
}

class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;  // a run of byte tokens, becoming one token
    bool in_run = false;
    for (std::string& token : tokens) {
      const int byte = fallback_byte(token);
      if (byte >= 0) {
        bytes += static_cast<char>(byte);
        in_run = true;
        continue;
      }
      if (in_run) out.push_back(std::move(bytes));
      bytes.clear();
      in_run = false;
      out.push_back(std::move(token));
    }
    if (in_run) out.push_back(std::move(bytes));
    tokens = std::move(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override { tokens.assign(1, joined(tokens, "")); }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, std::size_t start, std::size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      std::size_t begin = 0;
      for (std::size_t i = 0; i < start_ && token.compare(begin, content_.size(), content_) == 0; ++i) {
        begin += content_.size();
      }
      std::size_t end = token.size();
      for (std::size_t i = 0; i < stop_ && end >= begin + content_.size() &&
                              token.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i) {
        end -= content_.size();
      }
      token = token.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  std::size_t start_;
  std::size_t stop_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool drop_in_first, const std::string& where)
      : replacement_(TextPattern::literal(std::move(replacement), where)), drop_in_first_(drop_in_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replacement_.replace_all(tokens[i], i == 0 && drop_in_first_ ? "" : " ");
    }
  }

 private:
  TextPattern replacement_;
  bool drop_in_first_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

std::string one_character(const JsonReader& json) {
  const std::string text = json.as_string();
  if (text.empty() || char_or_byte_length(text) != text.size()) json.fail("expected one character, not '{}'", text);
  return text;
}

std::unique_ptr<Decoder> make_metaspace_decoder(const JsonReader& json) {
  json.allow_only({"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
  bool drop_in_first = true;
  if (const auto scheme = json.find("prepend_scheme")) drop_in_first = scheme->as_string() != "never";
  if (const auto legacy = json.find("add_prefix_space"); legacy && !legacy->value().is_null() && !legacy->as_bool()) {
    drop_in_first = false;
  }
  const std::string where = "tokenizer '" + json.file() + "': " + json.path();
  return std::make_unique<MetaspaceDecoder>(one_character(json.at("replacement")), drop_in_first, where);
}

std::unique_ptr<Decoder> make_decoder_at(const JsonReader& json, int depth) {
  if (depth > kMaxSequenceNesting) json.fail("Sequences nested more than {} deep", kMaxSequenceNesting);
  const std::string type = json.at("type").as_string();
  if (type == "ByteLevel") {
    json.allow_only({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    return std::make_unique<ByteLevelDecoder>();
  }
  if (type == "Replace") {
    json.allow_only({"type", "pattern", "content"});
    return std::make_unique<ReplaceDecoder>(read_text_pattern(json.at("pattern")), json.at("content").as_string());
  }
  if (type == "ByteFallback") {
    json.allow_only({"type"});
    return std::make_unique<ByteFallbackDecoder>();
  }
  if (type == "Fuse") {
    json.allow_only({"type"});
    return std::make_unique<FuseDecoder>();
  }
  if (type == "Strip") {
    json.allow_only({"type", "content", "start", "stop"});
    return std::make_unique<StripDecoder>(one_character(json.at("content")),
                                          static_cast<std::size_t>(json.at("start").as_integer(0, 1 << 20)),
                                          static_cast<std::size_t>(json.at("stop").as_integer(0, 1 << 20)));
  }
  if (type == "Metaspace") return make_metaspace_decoder(json);
  if (type == "Sequence") {
    json.allow_only({"type", "decoders"});
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const JsonReader& step : json.at("decoders").elements()) steps.push_back(make_decoder_at(step, depth + 1));
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  json.at("type").fail("decoder type '{}' is not supported (supported: ByteLevel, Replace, ByteFallback, Fuse, "
                       "Strip, Metaspace, Sequence)",
                       type);
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const JsonReader& json) { return make_decoder_at(json, 0); }

std::string decode_tokens(const Decoder* decoder, std::vector<std::string> tokens) {
  if (decoder == nullptr) return joined(tokens, " ");
  decoder->decode_chain(tokens);
  return joined(tokens, "");
}

}  // namespace tqlab::tokenizer
