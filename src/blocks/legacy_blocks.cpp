// ggml's blocks of 32 (rules and layout in legacy_blocks.h), written from the definitions in
// ggml-quants.c. Every expression keeps ggml's operation order in fp32 (the build forbids fused
// multiply-adds), so the bytes and the decoded floats are ggml's; tests/ggml_reference_test.cpp
// compares both with libggml-base on adversarial rows.
#include "blocks/legacy_blocks.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "blocks/ggml_numerics.h"
#include "core/dtype.h"

namespace tqlab {
namespace {

constexpr int kHalf = kQuantBlockSize / 2;

// The signed value of largest magnitude, the first one on ties (q4_0, q5_0).
float signed_extreme(const float* x) {
  float amax = 0.0f;
  float extreme = 0.0f;
  for (int j = 0; j < kQuantBlockSize; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      extreme = x[j];
    }
  }
  return extreme;
}

void min_max(const float* x, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < kQuantBlockSize; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

// ggml stores codes into uint8_t / int8_t: the low byte of the converted int.
std::uint8_t low_byte(std::int32_t value) { return static_cast<std::uint8_t>(value & 0xFF); }

// MIN(limit, (int8_t)value) as ggml writes it for q4_0, q4_1 and q5_0.
std::uint8_t clamped_code(float value, int limit) {
  const int code = static_cast<std::int8_t>(low_byte(ggml_truncate_to_int(value)));
  return static_cast<std::uint8_t>(std::min(limit, code));
}

void store_high_bits(std::uint32_t high_bits, std::uint8_t out[4]) {
  for (int b = 0; b < 4; ++b) out[b] = static_cast<std::uint8_t>(high_bits >> (8 * b));
}

std::uint32_t load_high_bits(const std::uint8_t in[4]) {
  std::uint32_t high_bits = 0;
  for (int b = 0; b < 4; ++b) high_bits |= static_cast<std::uint32_t>(in[b]) << (8 * b);
  return high_bits;
}

// Packs 5-bit codes: low nibbles two per byte, bit 4 of code j into bit j of qh.
template <typename Block>
void pack_five_bit(const std::uint8_t* codes, Block& block) {
  std::uint32_t high_bits = 0;
  for (int j = 0; j < kHalf; ++j) {
    const std::uint8_t low = codes[j], high = codes[j + kHalf];
    block.nibbles[j] = static_cast<std::uint8_t>((low & 0x0F) | ((high & 0x0F) << 4));
    high_bits |= static_cast<std::uint32_t>((low & 0x10u) >> 4) << j;
    high_bits |= static_cast<std::uint32_t>((high & 0x10u) >> 4) << (j + kHalf);
  }
  store_high_bits(high_bits, block.high_bits);
}

// The 5-bit code of value j of a q5 block, 0..31.
template <typename Block>
int five_bit_code(const Block& block, std::uint32_t high_bits, int j) {
  const int nibble = j < kHalf ? block.nibbles[j] & 0x0F : block.nibbles[j - kHalf] >> 4;
  return nibble | static_cast<int>(((high_bits >> j) & 1u) << 4);
}

}  // namespace

void quantize_row_q4_0(const float* x, BlockQ4_0* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, x += kQuantBlockSize) {
    const float d = signed_extreme(x) / -8.0f;
    const float id = ggml_reciprocal(d);
    y[i].scale_fp16 = float_to_half(d);
    for (int j = 0; j < kHalf; ++j) {
      const std::uint8_t low = clamped_code(x[j] * id + 8.5f, 15);
      const std::uint8_t high = clamped_code(x[j + kHalf] * id + 8.5f, 15);
      y[i].nibbles[j] = static_cast<std::uint8_t>(low | (high << 4));
    }
  }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, x += kQuantBlockSize) {
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / 15.0f;
    const float id = ggml_reciprocal(d);
    y[i].scale_fp16 = float_to_half(d);
    y[i].min_fp16 = float_to_half(min);
    for (int j = 0; j < kHalf; ++j) {
      const std::uint8_t low = clamped_code((x[j] - min) * id + 0.5f, 15);
      const std::uint8_t high = clamped_code((x[j + kHalf] - min) * id + 0.5f, 15);
      y[i].nibbles[j] = static_cast<std::uint8_t>(low | (high << 4));
    }
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, x += kQuantBlockSize) {
    const float d = signed_extreme(x) / -16.0f;
    const float id = ggml_reciprocal(d);
    y[i].scale_fp16 = float_to_half(d);
    std::uint8_t codes[kQuantBlockSize];
    for (int j = 0; j < kQuantBlockSize; ++j) codes[j] = clamped_code(x[j] * id + 16.5f, 31);
    pack_five_bit(codes, y[i]);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, x += kQuantBlockSize) {
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / 31.0f;
    const float id = ggml_reciprocal(d);
    y[i].scale_fp16 = float_to_half(d);
    y[i].min_fp16 = float_to_half(min);
    // No clamp here in ggml: (x - min) / d + 0.5 stays below 32 for finite blocks.
    std::uint8_t codes[kQuantBlockSize];
    for (int j = 0; j < kQuantBlockSize; ++j) codes[j] = low_byte(ggml_truncate_to_int((x[j] - min) * id + 0.5f));
    pack_five_bit(codes, y[i]);
  }
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, x += kQuantBlockSize) {
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlockSize; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = ggml_reciprocal(d);
    y[i].scale_fp16 = float_to_half(d);
    // roundf: halves away from zero.
    for (int j = 0; j < kQuantBlockSize; ++j) {
      y[i].codes[j] = static_cast<std::int8_t>(low_byte(ggml_round_to_int(x[j] * id)));
    }
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, y += kQuantBlockSize) {
    const float d = half_to_float(x[i].scale_fp16);
    for (int j = 0; j < kHalf; ++j) {
      y[j] = static_cast<float>((x[i].nibbles[j] & 0x0F) - 8) * d;
      y[j + kHalf] = static_cast<float>((x[i].nibbles[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, y += kQuantBlockSize) {
    const float d = half_to_float(x[i].scale_fp16);
    const float min = half_to_float(x[i].min_fp16);
    for (int j = 0; j < kHalf; ++j) {
      y[j] = static_cast<float>(x[i].nibbles[j] & 0x0F) * d + min;
      y[j + kHalf] = static_cast<float>(x[i].nibbles[j] >> 4) * d + min;
    }
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, y += kQuantBlockSize) {
    const float d = half_to_float(x[i].scale_fp16);
    const std::uint32_t high_bits = load_high_bits(x[i].high_bits);
    for (int j = 0; j < kQuantBlockSize; ++j) y[j] = static_cast<float>(five_bit_code(x[i], high_bits, j) - 16) * d;
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, y += kQuantBlockSize) {
    const float d = half_to_float(x[i].scale_fp16);
    const float min = half_to_float(x[i].min_fp16);
    const std::uint32_t high_bits = load_high_bits(x[i].high_bits);
    for (int j = 0; j < kQuantBlockSize; ++j) y[j] = static_cast<float>(five_bit_code(x[i], high_bits, j)) * d + min;
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQuantBlockSize; ++i, y += kQuantBlockSize) {
    const float d = half_to_float(x[i].scale_fp16);
    for (int j = 0; j < kQuantBlockSize; ++j) y[j] = static_cast<float>(x[i].codes[j]) * d;
  }
}

}  // namespace tqlab
