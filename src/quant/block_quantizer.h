// llama.cpp's KV-cache block formats as quantizers: q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl. Each
// vector is cut into blocks of 32 consecutive values; each block is encoded by ggml's reference
// quantizer, byte for byte (the codecs, their rules and layouts are in src/blocks/legacy_blocks.h
// and src/blocks/iq4_blocks.h; tests/ggml_reference_test.cpp compares them with libggml-base).
//
// Packed layout: the tensor's tokens*dim/32 blocks in row-major order (token by token, 32-value
// blocks left to right along the head dim), each block ggml's struct:
//   q8_0: 34 bytes per 32 values -> 8.5 bits/value      q4_0:   18 bytes -> 4.5 bits/value
//   q4_1: 20 bytes -> 5.0 bits/value                    q5_0:   22 bytes -> 5.5 bits/value
//   q5_1: 24 bytes -> 6.0 bits/value                    iq4_nl: 18 bytes -> 4.5 bits/value
#pragma once

#include <cstdint>
#include <string>

#include "blocks/legacy_blocks.h"
#include "quant/quantizer.h"

namespace tqlab {

enum class BlockFormat : std::uint8_t { q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl };

/// One of the block formats over a whole tensor; the head dim must be a
/// multiple of 32 (check_dim). A block whose fp16 scale or minimum would
/// overflow (|d| > 65504) is an InputError naming token and channels.
class BlockQuantizer final : public Quantizer {
 public:
  /// Blocks of 32 lie within a token (the head dim is a multiple of 32).
  bool encodes_tokens_independently() const override { return true; }
  explicit BlockQuantizer(BlockFormat format) : format_(format) {}

  std::string spec() const override;
  void check_dim(int dim) const override;
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  BlockFormat format_;
};

}  // namespace tqlab
