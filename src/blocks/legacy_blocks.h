// GGML's blocks of 32 with fp16 side values: q4_0, q4_1, q5_0, q5_1, q8_0, and their reference
// quantizer and dequantizer, byte for byte and bit for bit those of ggml.
//
// Source: ggml/src/ggml-common.h (block_q4_0 ... block_q8_0) and ggml/src/ggml-quants.c
// (quantize_row_q4_0_ref ... quantize_row_q8_0_ref, dequantize_row_q4_0 ... dequantize_row_q8_0).
// Rules, with x / d computed as x * (1/d) in fp32 (1/d taken as 0 when d = 0) and the fp32 d used
// for the codes while an fp16 copy of it is stored (rounded to nearest even):
//   q4_0: m = the value of largest |x| (the first on ties, sign kept); d = m / -8;
//         q = min(15, trunc(x / d + 8.5));                     x~ = (q - 8) * d
//   q4_1: d = (max - min) / 15; q = min(15, trunc((x - min) / d + 0.5));   x~ = q * d + min
//   q5_0: m as q4_0; d = m / -16; q = min(31, trunc(x / d + 16.5));        x~ = (q - 16) * d
//   q5_1: d = (max - min) / 31; q = trunc((x - min) / d + 0.5);            x~ = q * d + min
//   q8_0: d = amax / 127; q = round-half-away(x / d);          x~ = q * d
// A value whose code overflows the conversion (a scale below 2^-126 has no finite reciprocal, so
// x / d is +-Inf or NaN) gets the code ggml's x86-64 build gives it (see ggml_truncate_to_int), so
// the bytes equal ggml's for every finite input; such blocks' fp16 scale is 0 and decodes to 0.
//
// Packed layout (little-endian fp16): 4-bit codes: byte j holds value j in its low nibble and value
// j + 16 in its high nibble; q5_*: bit j of the 32-bit qh holds bit 4 of value j's code.
//   q4_0: d, 16 code bytes                -> 18 bytes per 32 values = 4.5 bits/value
//   q4_1: d, min, 16 code bytes           -> 20 bytes = 5.0 bits/value
//   q5_0: d, qh (4 bytes), 16 code bytes  -> 22 bytes = 5.5 bits/value
//   q5_1: d, min, qh, 16 code bytes       -> 24 bytes = 6.0 bits/value
//   q8_0: d, 32 int8 codes                -> 34 bytes = 8.5 bits/value
#pragma once

#include <cstdint>

namespace tqlab {

/// Values per block of every format of this header (ggml's QK4_0 ... QK8_0) and of iq4_nl.
inline constexpr int kQuantBlockSize = 32;

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

struct BlockQ5_0 {
  std::uint16_t scale_fp16;                  ///< d
  std::uint8_t high_bits[4];                 ///< little-endian uint32: bit j = bit 4 of value j's code
  std::uint8_t nibbles[kQuantBlockSize / 2]; ///< low 4 bits: byte j: value j (low), value j+16 (high)
};
static_assert(sizeof(BlockQ5_0) == 22, "q5_0 block must be 22 bytes as in ggml");

struct BlockQ5_1 {
  std::uint16_t scale_fp16;                  ///< d
  std::uint16_t min_fp16;                    ///< m, the block's minimum
  std::uint8_t high_bits[4];                 ///< little-endian uint32: bit j = bit 4 of value j's code
  std::uint8_t nibbles[kQuantBlockSize / 2]; ///< low 4 bits: byte j: value j (low), value j+16 (high)
};
static_assert(sizeof(BlockQ5_1) == 24, "q5_1 block must be 24 bytes as in ggml");

struct BlockQ8_0 {
  std::uint16_t scale_fp16;            ///< d
  std::int8_t codes[kQuantBlockSize];  ///< q, value i at index i
};
static_assert(sizeof(BlockQ8_0) == 34, "q8_0 block must be 34 bytes as in ggml");

/// Quantizes a row: x holds n floats (n a multiple of 32), y receives n / 32 blocks.
void quantize_row_q4_0(const float* x, BlockQ4_0* y, std::int64_t n);
void quantize_row_q4_1(const float* x, BlockQ4_1* y, std::int64_t n);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, std::int64_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, std::int64_t n);
void quantize_row_q8_0(const float* x, BlockQ8_0* y, std::int64_t n);

/// Dequantizes a row: x holds n / 32 blocks, y receives n floats.
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, std::int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, std::int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, std::int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, std::int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, std::int64_t n);

}  // namespace tqlab
