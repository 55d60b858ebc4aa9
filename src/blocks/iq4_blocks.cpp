// iq4_nl and iq4_xs (rules and layout in iq4_blocks.h), written from ggml-quants.c's definitions;
// the sums run in ggml's order in fp32 so that the stored scale is ggml's bit for bit.
#include "blocks/iq4_blocks.h"

#include <cmath>
#include <cstring>

#include "core/dtype.h"

namespace tqlab {
namespace {

constexpr int kBlock = 32;
constexpr int kHalf = kBlock / 2;
constexpr float kZeroBlockMax = 1e-15f;  // ggml's GROUP_MAX_EPS

// The index of the grid value nearest to `value` (ggml's best_index_int8): the ends clamp, a
// binary search finds the bracketing pair, and a tie goes to the upper value.
int nearest_grid_index(float value) {
  constexpr int n = 16;
  if (value <= kIq4NlGrid[0]) return 0;
  if (value >= kIq4NlGrid[n - 1]) return n - 1;
  int low = 0, high = n - 1;
  while (high - low > 1) {
    const int middle = (low + high) / 2;
    if (value < kIq4NlGrid[middle]) {
      high = middle;
    } else {
      low = middle;
    }
  }
  return value - kIq4NlGrid[high - 1] < kIq4NlGrid[high] - value ? high - 1 : high;
}

void unpack_grid_nibbles(const std::uint8_t* nibbles, float scale, float* y) {
  for (int j = 0; j < kHalf; ++j) {
    y[j] = scale * kIq4NlGrid[nibbles[j] & 0x0F];
    y[j + kHalf] = scale * kIq4NlGrid[nibbles[j] >> 4];
  }
}

}  // namespace

void quantize_row_iq4_nl(const float* x, BlockIq4Nl* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kBlock; ++i, x += kBlock) {
    // Index 8 (grid value 1): a block whose scale is 0 decodes to +0, not -0.
    std::memset(y[i].nibbles, 0x88, sizeof(y[i].nibbles));
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kBlock; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax < kZeroBlockMax) {
      y[i].scale_fp16 = float_to_half(0.0f);
      continue;
    }
    const float id = 1.0f / (max / kIq4NlGrid[0]);
    std::uint8_t codes[kBlock];
    float sum_qx = 0.0f, sum_qq = 0.0f;
    for (int j = 0; j < kBlock; ++j) {
      codes[j] = static_cast<std::uint8_t>(nearest_grid_index(id * x[j]));
      const float q = kIq4NlGrid[codes[j]];
      const float w = x[j] * x[j];
      sum_qx += w * q * x[j];
      sum_qq += w * q * q;
    }
    const float d = sum_qq > 0.0f ? sum_qx / sum_qq : 0.0f;
    y[i].scale_fp16 = float_to_half(d);
    for (int j = 0; j < kHalf; ++j) y[i].nibbles[j] = static_cast<std::uint8_t>(codes[j] | (codes[j + kHalf] << 4));
  }
}

void dequantize_row_iq4_nl(const BlockIq4Nl* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kBlock; ++i, y += kBlock) {
    unpack_grid_nibbles(x[i].nibbles, half_to_float(x[i].scale_fp16), y);
  }
}

void dequantize_row_iq4_xs(const BlockIq4Xs* x, float* y, std::int64_t n) {
  constexpr int kSuper = 256;
  for (std::int64_t i = 0; i < n / kSuper; ++i) {
    const float d = half_to_float(x[i].scale_fp16);
    for (int b = 0; b < kSuper / kBlock; ++b, y += kBlock) {
      const int scale = ((x[i].scales_low[b / 2] >> (4 * (b % 2))) & 0x0F) | (((x[i].scales_high >> (2 * b)) & 3) << 4);
      unpack_grid_nibbles(x[i].nibbles + kHalf * b, d * static_cast<float>(scale - 32), y);
    }
  }
}

}  // namespace tqlab
