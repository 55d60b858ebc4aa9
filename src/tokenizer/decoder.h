// Decoders: token strings back to text, for `tqlab tokenize --decode` (Hugging
// Face tokenizers docs, "Decoders"). Supported:
//   ByteLevel     byte-level characters back to their bytes (tokens with other
//                 characters, such as "<|im_start|>", stay as they are)
//   Replace       every match of a pattern in each token by a string
//   ByteFallback  runs of "<0xXX>" tokens back to their bytes
//   Fuse          all tokens into one
//   Strip         up to `start` leading and `stop` trailing `content` characters off each token
//   Metaspace     the replacement character back to a space (dropped in the
//                 first token unless prepend_scheme is never)
//   Sequence      each in turn
// Without a decoder the tokens are joined with spaces, as Hugging Face does.
//
// The result is bytes: where Hugging Face replaces bytes that do not form
// UTF-8 by U+FFFD, tqlab keeps them, so that decoding gives back exactly the
// bytes a byte-level or byte-fallback tokenizer was given.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tqlab {
class JsonReader;
}

namespace tqlab::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  /// Rewrites the list of token strings (a decoder may join or split them).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

/// The decoder a tokenizer.json "decoder" object describes; InputError naming
/// the JSON path for another type or a malformed object.
std::unique_ptr<Decoder> make_decoder(const JsonReader& json);

/// The text of `tokens` through `decoder` (nullptr: joined with spaces).
std::string decode_tokens(const Decoder* decoder, std::vector<std::string> tokens);

}  // namespace tqlab::tokenizer
