// The normalizers of normalizer.h.
#include "tokenizer/normalizer.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "io/json_reader.h"
#include "tokenizer/nfc.h"
#include "tokenizer/nesting.h"
#include "tokenizer/pattern_json.h"
#include "tokenizer/text_pattern.h"

namespace tqlab::tokenizer {
namespace {

class NfcNormalizer final : public Normalizer {
 public:
  void normalize(std::string& text) const override { text = to_nfc(text); }
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(TextPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& text) const override { text = pattern_.replace_all(text, content_); }

 private:
  TextPattern pattern_;
  std::string content_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

std::unique_ptr<Normalizer> make_normalizer_at(const JsonReader& json, int depth) {
  if (depth > kMaxSequenceNesting) json.fail("Sequences nested more than {} deep", kMaxSequenceNesting);
  const std::string type = json.at("type").as_string();
  if (type == "NFC") {
    json.allow_only({"type"});
    return std::make_unique<NfcNormalizer>();
  }
  if (type == "Prepend") {
    json.allow_only({"type", "prepend"});
    return std::make_unique<PrependNormalizer>(json.at("prepend").as_string());
  }
  if (type == "Replace") {
    json.allow_only({"type", "pattern", "content"});
    return std::make_unique<ReplaceNormalizer>(read_text_pattern(json.at("pattern")), json.at("content").as_string());
  }
  if (type == "Sequence") {
    json.allow_only({"type", "normalizers"});
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const JsonReader& step : json.at("normalizers").elements())
      steps.push_back(make_normalizer_at(step, depth + 1));
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  json.at("type").fail("normalizer type '{}' is not supported (supported: NFC, Prepend, Replace, Sequence)", type);
}

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const JsonReader& json) { return make_normalizer_at(json, 0); }

}  // namespace tqlab::tokenizer
