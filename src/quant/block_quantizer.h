// llama.cpp-style block quantizers q8_0, q4_0, q4_1: each vector is cut into
// blocks of 32 consecutive values, each block stored with an fp16 scale (and
// an fp16 minimum for q4_1).
//
// Source: ggml's reference quantizers (ggml/src/ggml-quants.c,
// quantize_row_q8_0_ref / q4_0_ref / q4_1_ref and the dequantize_row_*
// routines; block structs in ggml-common.h). We follow their rounding rules
// exactly, including computing codes with the fp32 scale while storing it as
// fp16:
//   q8_0: d = amax / 127;  q = round-half-away(x / d) in -127..127;  x~ = q * d
//   q4_0: m = the value of largest |x| (first one on ties, sign kept);
//         d = m / -8;  q = min(15, trunc(x / d + 8.5));  x~ = (q - 8) * d
//   q4_1: d = (max - min) / 15;  q = min(15, trunc((x - min) / d + 0.5));
//         x~ = q * d + min
// (x / d above is x * (1/d), and 1/d is taken as 0 when d = 0.)
//
// Packed layout: the tensor's tokens*dim/32 blocks in row-major order (token
// by token, 32-value blocks left to right along the head dim), each block the
// bytes of the structs below (little-endian fp16). 4-bit codes: byte j holds
// value j in its low nibble and value j + 16 in its high nibble.
//   q8_0: 34 bytes per 32 values -> 8.5 bits/value
//   q4_0: 18 bytes per 32 values -> 4.5 bits/value
//   q4_1: 20 bytes per 32 values -> 5.0 bits/value
#pragma once

#include <cstdint>
#include <string>

#include "quant/quantizer.h"

namespace tqlab {

/// Values per block of every block format.
inline constexpr int kQuantBlockSize = 32;

struct BlockQ8_0 {
  std::uint16_t scale_fp16;               ///< d
  std::int8_t codes[kQuantBlockSize];     ///< q, value i at index i
};
static_assert(sizeof(BlockQ8_0) == 34, "q8_0 block must be 34 bytes as in ggml");

struct BlockQ4_0 {
  std::uint16_t scale_fp16;                  ///< d
  std::uint8_t nibbles[kQuantBlockSize / 2]; ///< byte j: value j (low), value j+16 (high)
};
static_assert(sizeof(BlockQ4_0) == 18, "q4_0 block must be 18 bytes as in ggml");

struct BlockQ4_1 {
  std::uint16_t scale_fp16;                  ///< d
  std::uint16_t min_fp16;                    ///< m, the block's minimum
  std::uint8_t nibbles[kQuantBlockSize / 2]; ///< byte j: value j (low), value j+16 (high)
};
static_assert(sizeof(BlockQ4_1) == 20, "q4_1 block must be 20 bytes as in ggml");

/// Quantizes one block. x: kQuantBlockSize finite floats.
BlockQ8_0 quantize_block_q8_0(const float* x);
BlockQ4_0 quantize_block_q4_0(const float* x);
BlockQ4_1 quantize_block_q4_1(const float* x);

/// Dequantizes one block. out: kQuantBlockSize floats.
void dequantize_block(const BlockQ8_0& block, float* out);
void dequantize_block(const BlockQ4_0& block, float* out);
void dequantize_block(const BlockQ4_1& block, float* out);

enum class BlockFormat : std::uint8_t { q8_0, q4_0, q4_1 };

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
