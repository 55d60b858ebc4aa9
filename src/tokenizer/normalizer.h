// Normalizers: the first step of tokenization, applied to each stretch of text
// between added tokens that are matched on the raw text (Hugging Face
// tokenizers docs, "Normalizers"). Supported: NFC, Prepend, Replace, Sequence.
#pragma once

#include <memory>
#include <string>

namespace tqlab {
class JsonReader;
}

namespace tqlab::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  /// Rewrites `text` in place. Text need not be UTF-8 (stray bytes are kept).
  virtual void normalize(std::string& text) const = 0;
};

/// The normalizer a tokenizer.json "normalizer" object describes:
///   {"type": "NFC"}
///   {"type": "Prepend", "prepend": S}            S before non-empty text
///   {"type": "Replace", "pattern": P, "content": S}   every match of P (text_pattern.h) by S
///   {"type": "Sequence", "normalizers": [...]}  each in turn
/// InputError naming the JSON path for another type or a malformed object.
std::unique_ptr<Normalizer> make_normalizer(const JsonReader& json);

}  // namespace tqlab::tokenizer
