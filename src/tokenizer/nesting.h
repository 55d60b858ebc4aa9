// How deep tokenizer.json's Sequence components (normalizers, pre-tokenizers,
// post-processors, decoders) may nest. Real files nest one level; the limit
// keeps a hostile file from exhausting the stack of the recursive readers.
#pragma once

namespace tqlab::tokenizer {

inline constexpr int kMaxSequenceNesting = 32;

}  // namespace tqlab::tokenizer
