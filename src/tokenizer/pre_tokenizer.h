// Pre-tokenizers: cut normalized text into the pieces ("words") the model
// tokenizes one by one, and may rewrite them (Hugging Face tokenizers docs,
// "Pre-tokenizers"). Supported:
//   ByteLevel  {add_prefix_space, use_regex}: optionally " " before each piece
//              that lacks one, optionally GPT-2's split regex, then every byte
//              written in the byte-level alphabet (byte_level_alphabet.h)
//   Split      {pattern, behavior, invert}: cut at the matches of a pattern;
//              behavior Isolated, Removed, MergedWithPrevious, MergedWithNext
//              or Contiguous decides what becomes of the matches
//   Metaspace  {replacement, prepend_scheme, split}: spaces become the
//              replacement character ("▁"), which is put before the text
//              (always, first: only before the start of the whole input, never),
//              and pieces are cut before each replacement character
//   Sequence   {pretokenizers}: each in turn on every piece
// Empty pieces are dropped after every step. A byte that belongs to no UTF-8
// character is never part of a regex match (text_pattern.h); Split and
// ByteLevel's regex make each such byte a piece of its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/text_pattern.h"

namespace tqlab {
class JsonReader;
}

namespace tqlab::tokenizer {

/// The pieces of one stretch of text, in order.
using Pieces = std::vector<std::string>;

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Cuts and rewrites `pieces` in place. `first_starts_input`: pieces[0]
  /// begins at the first byte of the whole input (Metaspace's "first" scheme).
  virtual void pre_tokenize(Pieces& pieces, bool first_starts_input) const = 0;
  /// True when every byte of every piece comes out written in the byte-level
  /// alphabet, so that any input bytes, UTF-8 or not, reach the model as characters.
  virtual bool writes_byte_level() const = 0;
};

/// The pre-tokenizer a tokenizer.json "pre_tokenizer" object describes.
/// InputError naming the JSON path for another type or a malformed object.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonReader& json);

/// What Split does with the matches of its pattern: drops them (removed), keeps
/// each as a piece (isolated), joins each to the piece before or after it, or
/// joins runs of adjacent matches into one piece (contiguous).
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };
/// Cuts `text` at the matches of `pattern` as `behavior` says, appending the
/// non-empty pieces to `out`; `invert` swaps the roles of the matches and the
/// text between them. The Split pre-tokenizer on one piece.
void split_by_pattern(const std::string& text, const TextPattern& pattern, SplitBehavior behavior, bool invert,
                      Pieces& out);

}  // namespace tqlab::tokenizer
