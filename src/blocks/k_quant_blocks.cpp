// ggml's k-quant decoders (layouts in k_quant_blocks.h), written from ggml-quants.c's definitions;
// tests/ggml_reference_test.cpp compares them bit for bit with libggml-base on blocks made by
// ggml's own quantizers.
#include "blocks/k_quant_blocks.h"

#include "core/dtype.h"

namespace tqlab {
namespace {

// Scale and min j (0..7) of a q4_K / q5_K super-block (ggml's get_scale_min_k4).
void scale_and_min(int j, const std::uint8_t* scales, int& scale, int& min) {
  if (j < 4) {
    scale = scales[j] & 63;
    min = scales[j + 4] & 63;
  } else {
    scale = (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4);
    min = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// The 16 6-bit scales of a q3_K super-block, 0..63.
void q3_scales(const std::uint8_t* packed, int* scales) {
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? packed[i] & 0x0F : packed[i - 8] >> 4;
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = low | (high << 4);
  }
}

}  // namespace

void dequantize_row_q2_K(const BlockQ2_K* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kSuperBlockSize; ++i) {
    const float d = half_to_float(x[i].scale_fp16);
    const float dmin = half_to_float(x[i].min_fp16);
    const std::uint8_t* codes = x[i].codes;
    int sub_block = 0;
    for (int half = 0; half < 2; ++half, codes += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part, ++sub_block) {
          const std::uint8_t packed = x[i].scales[sub_block];
          const float scale = d * static_cast<float>(packed & 0x0F);
          const float min = dmin * static_cast<float>(packed >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ = scale * static_cast<float>((codes[16 * part + l] >> shift) & 3) - min;
          }
        }
      }
    }
  }
}

void dequantize_row_q3_K(const BlockQ3_K* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kSuperBlockSize; ++i) {
    const float d = half_to_float(x[i].scale_fp16);
    int scales[16];
    q3_scales(x[i].scales, scales);
    const std::uint8_t* codes = x[i].codes;
    int sub_block = 0;
    int mask = 1;
    for (int half = 0; half < 2; ++half, codes += 32) {
      for (int shift = 0; shift < 8; shift += 2, mask <<= 1) {
        for (int part = 0; part < 2; ++part, ++sub_block) {
          const float scale = d * static_cast<float>(scales[sub_block] - 32);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int code = ((codes[l] >> shift) & 3) - ((x[i].high_mask[l] & mask) ? 0 : 4);
            *y++ = scale * static_cast<float>(code);
          }
        }
      }
    }
  }
}

// q4_K and q5_K: 4 pairs of sub-blocks of 32, low nibbles then high nibbles of the same 32 bytes;
// `high_bits` (q5_K) adds bit 2p / 2p + 1 of high_bits[l] as 16.
template <typename Block>
void dequantize_scaled_min_blocks(const Block& block, const std::uint8_t* high_bits, float* y) {
  const float d = half_to_float(block.scale_fp16);
  const float dmin = half_to_float(block.min_fp16);
  const std::uint8_t* codes = block.codes;
  for (int pair = 0; pair < 4; ++pair, codes += 32) {
    for (int part = 0; part < 2; ++part) {
      int scale_bits, min_bits;
      scale_and_min(2 * pair + part, block.scales, scale_bits, min_bits);
      const float scale = d * static_cast<float>(scale_bits);
      const float min = dmin * static_cast<float>(min_bits);
      const int bit = 2 * pair + part;
      for (int l = 0; l < 32; ++l) {
        int code = part == 0 ? codes[l] & 0x0F : codes[l] >> 4;
        if (high_bits != nullptr && ((high_bits[l] >> bit) & 1)) code += 16;
        *y++ = scale * static_cast<float>(code) - min;
      }
    }
  }
}

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kSuperBlockSize; ++i, y += kSuperBlockSize) {
    dequantize_scaled_min_blocks(x[i], nullptr, y);
  }
}

void dequantize_row_q5_K(const BlockQ5_K* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kSuperBlockSize; ++i, y += kSuperBlockSize) {
    dequantize_scaled_min_blocks(x[i], x[i].high_bits, y);
  }
}

void dequantize_row_q6_K(const BlockQ6_K* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kSuperBlockSize; ++i) {
    const float d = half_to_float(x[i].scale_fp16);
    const std::uint8_t* low = x[i].low;
    const std::uint8_t* high = x[i].high;
    const std::int8_t* scales = x[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, low += 64, high += 32, scales += 8) {
      for (int l = 0; l < 32; ++l) {
        const int sub_block = l / 16;
        const int q1 = ((low[l] & 0x0F) | (((high[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((low[l + 32] & 0x0F) | (((high[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((low[l] >> 4) | (((high[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((low[l + 32] >> 4) | (((high[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(scales[sub_block]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(scales[sub_block + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(scales[sub_block + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(scales[sub_block + 6]) * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace tqlab
