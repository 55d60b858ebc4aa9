// GGML's non-linear 4-bit blocks: iq4_nl (blocks of 32, one fp16 scale, codes index a fixed
// non-uniform grid) with its reference quantizer, and iq4_xs (super-blocks of 256: the same grid,
// a 6-bit scale per 32 values under an fp16 super-scale), decoded only.
//
// Source: ggml/src/ggml-common.h (block_iq4_nl, block_iq4_xs, kvalues_iq4nl) and
// ggml/src/ggml-quants.c (quantize_row_iq4_nl_ref -> quantize_row_iq4_nl_impl with ntry = -1 and no
// importance weights; dequantize_row_iq4_nl, dequantize_row_iq4_xs).
//
// iq4_nl, per block of 32 (all arithmetic fp32, in ggml's order):
//   grid v = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
//   if max|x| < 1e-15: d = 0 (ggml leaves the codes unset; tqlab writes code 8, so the block decodes
//     to +0);
//   else m = the value of largest |x| (first on ties), d0 = m / -127, id = 1 / d0,
//     code_j = the index of the grid value nearest to id * x_j (binary search; a tie between two
//              neighbours goes to the upper one), weights w_j = x_j^2,
//     d = sum(w q x) / sum(w q q) over q = v[code] (0 when the denominator is 0);
//   store fp16(d) and the codes from d0 (they are not recomputed with d).
//   x~_j = fp16(d) * v[code_j].
// Layout: fp16 d, 16 bytes (byte j: value j low nibble, value j + 16 high) -> 18 bytes per 32
// values = 4.5 bits/value.
//
// iq4_xs, per super-block of 256: fp16 d, uint16 scales_h (2 high bits per sub-block), 4 bytes
// scales_l (4 low bits per sub-block, sub-block 2k low nibble, 2k+1 high), 128 code bytes (16 per
// sub-block of 32, nibbles as iq4_nl). Sub-block b: ls = scales_l nibble | scales_h bits << 4,
// x~ = (d * (ls - 32)) * v[code]. 136 bytes per 256 values = 4.25 bits/value.
#pragma once

#include <cstdint>

namespace tqlab {

/// ggml's kvalues_iq4nl: the non-uniform 4-bit grid of iq4_nl and iq4_xs.
inline constexpr std::int8_t kIq4NlGrid[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

struct BlockIq4Nl {
  std::uint16_t scale_fp16;   ///< d
  std::uint8_t nibbles[16];   ///< grid indices; byte j: value j (low), value j+16 (high)
};
static_assert(sizeof(BlockIq4Nl) == 18, "iq4_nl block must be 18 bytes as in ggml");

struct BlockIq4Xs {
  std::uint16_t scale_fp16;   ///< d, the super-block scale
  std::uint16_t scales_high;  ///< bits 2b, 2b+1: bits 4, 5 of sub-block b's scale
  std::uint8_t scales_low[4]; ///< low 4 bits of sub-block scales: byte k: 2k (low), 2k+1 (high)
  std::uint8_t nibbles[128];  ///< 16 bytes per sub-block of 32, nibbles as iq4_nl
};
static_assert(sizeof(BlockIq4Xs) == 136, "iq4_xs block must be 136 bytes as in ggml");

/// Quantizes a row: x holds n floats (n a multiple of 32), y receives n / 32 blocks.
void quantize_row_iq4_nl(const float* x, BlockIq4Nl* y, std::int64_t n);

/// Dequantizes a row: y receives n floats (n a multiple of 32, resp. 256 for iq4_xs).
void dequantize_row_iq4_nl(const BlockIq4Nl* x, float* y, std::int64_t n);
void dequantize_row_iq4_xs(const BlockIq4Xs* x, float* y, std::int64_t n);

}  // namespace tqlab
