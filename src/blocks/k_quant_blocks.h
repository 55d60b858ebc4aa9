// GGML's k-quant super-blocks of 256 values, decoded only (weights in GGUF files): q2_K, q3_K,
// q4_K, q5_K, q6_K. tqlab reads them; it does not write them.
//
// Source: ggml/src/ggml-common.h (block_q2_K ... block_q6_K, K_SCALE_SIZE = 12) and
// ggml/src/ggml-quants.c (dequantize_row_q2_K ... dequantize_row_q6_K, get_scale_min_k4).
// fp16 values are little-endian; "sub-block" is a run of 16 (q2_K, q3_K, q6_K) or 32 (q4_K, q5_K)
// consecutive values. Each decoded value is computed in fp32 in ggml's order, as written below.
//
//   q2_K (84 bytes, 2.625 bits/value): scales[16] (low nibble: scale sc, high: min m, per sub-block
//     of 16), qs[64] (2-bit codes), fp16 d, fp16 dmin. Values 128h + 32k + l (h = 0..1 half,
//     k = 0..3 shift pair, l = 0..31) take bits 2k..2k+1 of qs[32h + l] and sub-block
//     8h + 2k + l / 16; x~ = (d * sc) * q - (dmin * m).
//   q3_K (110 bytes, 3.4375 bits/value): hmask[32] (high bit, cleared means -4), qs[64] (low 2
//     bits, laid out as q2_K), scales[12] (16 6-bit scales, packed as below), fp16 d.
//     x~ = (d * (s - 32)) * (low2 - (hmask bit set ? 0 : 4)); the hmask bit of value 128h + 32k + l
//     is bit 4h + k of hmask[l].
//   q4_K (144 bytes, 4.5 bits/value): fp16 d, fp16 dmin, scales[12] (8 6-bit scales and 8 6-bit
//     mins, get_scale_min_k4), qs[128]. Values 64p + l (p = 0..3, l < 32) take the low nibble of
//     qs[32p + l] with scale/min 2p, values 64p + 32 + l its high nibble with 2p + 1;
//     x~ = (d * sc) * q - (dmin * m).
//   q5_K (176 bytes, 5.5 bits/value): as q4_K plus qh[32]: bit 2p (low nibble) or 2p + 1 (high) of
//     qh[l] adds 16 to the code.
//   q6_K (210 bytes, 6.5625 bits/value): ql[128] (low 4 bits), qh[64] (high 2 bits), int8
//     scales[16], fp16 d. In each half h of 128 values and for l < 32: values l, l+32, l+64, l+96
//     take ql[64h + l] low, ql[64h + l + 32] low, ql[64h + l] high, ql[64h + l + 32] high, and
//     bits 0-1, 2-3, 4-5, 6-7 of qh[32h + l]; code q - 32; scale index 8h + l/16 + 0, 2, 4, 6;
//     x~ = (d * scale) * (q - 32).
//
// 6-bit scales of q4_K/q5_K (get_scale_min_k4), j = 0..7: for j < 4, scale = s[j] & 63 and min =
// s[j + 4] & 63; else scale = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4 and min = (s[j + 4] >> 4) |
// (s[j] >> 6) << 4. q3_K's 16 scales: the low 4 bits are the nibbles of bytes 0..7 (scale i < 8:
// low nibble of byte i; i >= 8: high nibble of byte i - 8), the high 2 bits are bits 2(i / 4) and
// 2(i / 4) + 1 of byte 8 + i % 4.
#pragma once

#include <cstdint>

namespace tqlab {

/// Values per k-quant super-block (ggml's QK_K).
inline constexpr int kSuperBlockSize = 256;

struct BlockQ2_K {
  std::uint8_t scales[16];  ///< per sub-block of 16: scale (low nibble), min (high nibble)
  std::uint8_t codes[64];   ///< 2-bit codes
  std::uint16_t scale_fp16; ///< d
  std::uint16_t min_fp16;   ///< dmin
};
static_assert(sizeof(BlockQ2_K) == 84, "q2_K block must be 84 bytes as in ggml");

struct BlockQ3_K {
  std::uint8_t high_mask[32]; ///< the codes' high bits (cleared: subtract 4)
  std::uint8_t codes[64];     ///< the codes' low 2 bits
  std::uint8_t scales[12];    ///< 16 6-bit scales
  std::uint16_t scale_fp16;   ///< d
};
static_assert(sizeof(BlockQ3_K) == 110, "q3_K block must be 110 bytes as in ggml");

struct BlockQ4_K {
  std::uint16_t scale_fp16; ///< d
  std::uint16_t min_fp16;   ///< dmin
  std::uint8_t scales[12];  ///< 8 6-bit scales and 8 6-bit mins
  std::uint8_t codes[128];  ///< 4-bit codes
};
static_assert(sizeof(BlockQ4_K) == 144, "q4_K block must be 144 bytes as in ggml");

struct BlockQ5_K {
  std::uint16_t scale_fp16; ///< d
  std::uint16_t min_fp16;   ///< dmin
  std::uint8_t scales[12];  ///< 8 6-bit scales and 8 6-bit mins
  std::uint8_t high_bits[32]; ///< the codes' fifth bits
  std::uint8_t codes[128];  ///< the codes' low 4 bits
};
static_assert(sizeof(BlockQ5_K) == 176, "q5_K block must be 176 bytes as in ggml");

struct BlockQ6_K {
  std::uint8_t low[128];    ///< the codes' low 4 bits
  std::uint8_t high[64];    ///< the codes' high 2 bits
  std::int8_t scales[16];   ///< one 8-bit scale per sub-block of 16
  std::uint16_t scale_fp16; ///< d
};
static_assert(sizeof(BlockQ6_K) == 210, "q6_K block must be 210 bytes as in ggml");

/// Dequantizes a row: x holds n / 256 super-blocks, y receives n floats (n a multiple of 256).
void dequantize_row_q2_K(const BlockQ2_K* x, float* y, std::int64_t n);
void dequantize_row_q3_K(const BlockQ3_K* x, float* y, std::int64_t n);
void dequantize_row_q4_K(const BlockQ4_K* x, float* y, std::int64_t n);
void dequantize_row_q5_K(const BlockQ5_K* x, float* y, std::int64_t n);
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, std::int64_t n);

}  // namespace tqlab
