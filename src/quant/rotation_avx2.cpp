// The AVX2 + FMA forms of the rotation kernels (rotation_simd.h): the fast
// Walsh–Hadamard transform in registers and in memory, and the Haar
// rotation's dense product in fused multiply-add tiles. Compiled in a target
// region (core/simd_target.h): every #include comes before it.

#include "quant/rotation_simd.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/simd_intrinsics.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX2_BEGIN

namespace tqlab::simd {
namespace {

using rotation_kernels::fwht_scale;
using rotation_kernels::HadamardRows;
using rotation_kernels::kMaxLogInRegisters;
using rotation_kernels::kMinLogInRegisters;

// ---------------------------------------------------------------------------
// Fast Walsh–Hadamard transform

#include "quant/float_lanes_avx2.inc"

#include "quant/fwht_in_registers.inc"

// ---------------------------------------------------------------------------
// Hadamard rows of 128 floats (the tq quantizer's usual block), one row in the
// sixteen ymm registers. fwht_normalized_in_registers' network and products
// in its order, so its bits, with two differences that cost it time at this
// size: which optional steps run is fixed at compile time (no tests of null
// pointers inside the row, fewer live values to spill), and the poison of
// each result, result * 0 (NaN for Inf or NaN), goes to four accumulators in
// turn instead of one fused multiply-add chain of sixteen dependent steps.
// The butterfly stage of span 8 Half floats on sixteen registers: register i
// (bit Half of i clear) and i + Half become their sum and difference, the
// eight pairs by index.
template <int Half>
[[gnu::always_inline]] inline void cross_register_stage(__m256* v) {
#pragma GCC unroll 8
  for (int pair = 0; pair < 8; ++pair) {
    const int i = pair / Half * 2 * Half + pair % Half;
    const __m256 a = v[i];
    const __m256 b = v[i + Half];
    v[i] = _mm256_add_ps(a, b);
    v[i + Half] = _mm256_sub_ps(a, b);
  }
}

// With post signs, the scale and the signs are one product per value
// (fold_post_signs).
template <bool kPreScale, bool kPreSigns, bool kPostSigns, bool kPostScale>
bool hadamard_rows_128(const HadamardRows& rows) {
  constexpr int kRegisters = 16;
  const __m256 scale = _mm256_set1_ps(fwht_scale(7));
  alignas(32) float signed_scales[kPostSigns ? 8 * kRegisters : 1];
  if constexpr (kPostSigns) fold_post_signs(fwht_scale(7), rows.post_signs, 8 * kRegisters, signed_scales);
  __m256 poison[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (std::int64_t r = 0; r < rows.n; ++r) {
    const float* in = rows.in + r * rows.in_stride;
    float* out = rows.out + r * rows.out_stride;
    __m256 v[kRegisters];
    __m256 pre_factor = _mm256_setzero_ps();
    if constexpr (kPreScale) pre_factor = _mm256_set1_ps(rows.pre_scales[r]);
#pragma GCC unroll 16
    for (int i = 0; i < kRegisters; ++i) {
      __m256 loaded = _mm256_loadu_ps(in + 8 * i);
      if constexpr (kPreScale) loaded = _mm256_mul_ps(loaded, pre_factor);
      if constexpr (kPreSigns) loaded = _mm256_mul_ps(loaded, _mm256_loadu_ps(rows.pre_signs + 8 * i));
      v[i] = Avx2Floats::butterflies_within_register(loaded);
    }
    cross_register_stage<1>(v);
    cross_register_stage<2>(v);
    cross_register_stage<4>(v);
    cross_register_stage<8>(v);
    __m256 post_factor = _mm256_setzero_ps();
    if constexpr (kPostScale) post_factor = _mm256_set1_ps(rows.post_scales[r]);
#pragma GCC unroll 16
    for (int i = 0; i < kRegisters; ++i) {
      __m256 result;
      if constexpr (kPostSigns) {
        result = _mm256_mul_ps(v[i], _mm256_load_ps(signed_scales + 8 * i));
      } else {
        result = _mm256_mul_ps(v[i], scale);
      }
      if constexpr (kPostScale) result = _mm256_mul_ps(result, post_factor);
      _mm256_storeu_ps(out + 8 * i, result);
      if constexpr (kPostScale) poison[i % 4] = _mm256_fmadd_ps(result, _mm256_setzero_ps(), poison[i % 4]);
    }
  }
  return Avx2Floats::all_finite(
      _mm256_add_ps(_mm256_add_ps(poison[0], poison[1]), _mm256_add_ps(poison[2], poison[3])));
}

// hadamard_rows_128 for the steps `rows` asks for: the combinations the
// rotations use (rotation.cpp: forward, inverse, their scaled forms, and the
// bare transform); any other takes the general kernel.
bool hadamard_rows_128_dispatch(const HadamardRows& rows) {
  const bool pre_scale = rows.pre_scales != nullptr;
  const bool pre_signs = rows.pre_signs != nullptr;
  const bool post_signs = rows.post_signs != nullptr;
  const bool post_scale = rows.post_scales != nullptr;
  if (!post_signs && !post_scale) {
    if (pre_scale && pre_signs) return hadamard_rows_128<true, true, false, false>(rows);
    if (!pre_scale && pre_signs) return hadamard_rows_128<false, true, false, false>(rows);
    if (!pre_scale && !pre_signs) return hadamard_rows_128<false, false, false, false>(rows);
  } else if (!pre_scale && !pre_signs && post_signs) {
    if (post_scale) return hadamard_rows_128<false, false, true, true>(rows);
    return hadamard_rows_128<false, false, true, false>(rows);
  }
  return hadamard_rows_in_registers<Avx2Floats, 7>(rows);
}

// n > 128: the first seven stages (spans 1 ... 64) act on each 128-float
// chunk separately, so they run in registers chunk by chunk (scale 1 is
// exact); the remaining stages are passes over memory, two stages (spans half
// and 2 half) per pass, then a lone final stage when their count is odd. The
// final stage multiplies by the scale.
void fwht_normalized_in_memory(float* x, int log_n) {
  const std::size_t n = std::size_t{1} << log_n;
  constexpr std::size_t kChunk = std::size_t{1} << kMaxLogInRegisters;
  for (std::size_t chunk = 0; chunk < n; chunk += kChunk) {
    fwht_normalized_in_registers<Avx2Floats, kMaxLogInRegisters>(x + chunk, x + chunk, 1.0f, nullptr, nullptr, nullptr,
                                                                  nullptr, _mm256_setzero_ps());
  }
  const __m256 scale_vector = _mm256_set1_ps(fwht_scale(log_n));
  std::size_t half = kChunk;
  for (; 4 * half <= n; half *= 4) {
    const bool last = 4 * half == n;
    for (std::size_t block = 0; block < n; block += 4 * half) {
      float* p0 = x + block;
      float* p1 = p0 + half;
      float* p2 = p1 + half;
      float* p3 = p2 + half;
      for (std::size_t j = 0; j < half; j += 8) {
        const __m256 a0 = _mm256_loadu_ps(p0 + j);
        const __m256 a1 = _mm256_loadu_ps(p1 + j);
        const __m256 a2 = _mm256_loadu_ps(p2 + j);
        const __m256 a3 = _mm256_loadu_ps(p3 + j);
        const __m256 b0 = _mm256_add_ps(a0, a1);
        const __m256 b1 = _mm256_sub_ps(a0, a1);
        const __m256 b2 = _mm256_add_ps(a2, a3);
        const __m256 b3 = _mm256_sub_ps(a2, a3);
        __m256 c0 = _mm256_add_ps(b0, b2);
        __m256 c1 = _mm256_add_ps(b1, b3);
        __m256 c2 = _mm256_sub_ps(b0, b2);
        __m256 c3 = _mm256_sub_ps(b1, b3);
        if (last) {
          c0 = _mm256_mul_ps(c0, scale_vector);
          c1 = _mm256_mul_ps(c1, scale_vector);
          c2 = _mm256_mul_ps(c2, scale_vector);
          c3 = _mm256_mul_ps(c3, scale_vector);
        }
        _mm256_storeu_ps(p0 + j, c0);
        _mm256_storeu_ps(p1 + j, c1);
        _mm256_storeu_ps(p2 + j, c2);
        _mm256_storeu_ps(p3 + j, c3);
      }
    }
  }
  if (2 * half == n) {
    float* lo = x;
    float* hi = x + half;
    for (std::size_t j = 0; j < half; j += 8) {
      const __m256 a = _mm256_loadu_ps(lo + j);
      const __m256 b = _mm256_loadu_ps(hi + j);
      _mm256_storeu_ps(lo + j, _mm256_mul_ps(_mm256_add_ps(a, b), scale_vector));
      _mm256_storeu_ps(hi + j, _mm256_mul_ps(_mm256_sub_ps(a, b), scale_vector));
    }
  }
}

// ---------------------------------------------------------------------------
// Haar: the dense product (rotation.cpp's multiply_by_rows_portable says why
// it is a sum of scaled rows)

// With FMA every step is an explicit fused multiply-add (intrinsic in the
// tiles, std::fma at the edges), so tiles and edges round identically.
// A tile of 4 vectors x 16 outputs keeps its 8 accumulators in registers while
// k runs, so each matrix row segment loaded serves four vectors.
constexpr std::size_t kTileVectors = 4;
constexpr std::size_t kTileWidth = 16;

void multiply_tile(std::size_t d, const float* rows, const float* x, std::size_t column, float* y) {
  __m256 low[kTileVectors];
  __m256 high[kTileVectors];
  for (std::size_t v = 0; v < kTileVectors; ++v) low[v] = high[v] = _mm256_setzero_ps();
  for (std::size_t k = 0; k < d; ++k) {
    const __m256 row_low = _mm256_loadu_ps(rows + k * d + column);
    const __m256 row_high = _mm256_loadu_ps(rows + k * d + column + 8);
    for (std::size_t v = 0; v < kTileVectors; ++v) {
      const __m256 weight = _mm256_broadcast_ss(x + v * d + k);
      low[v] = _mm256_fmadd_ps(weight, row_low, low[v]);
      high[v] = _mm256_fmadd_ps(weight, row_high, high[v]);
    }
  }
  for (std::size_t v = 0; v < kTileVectors; ++v) {
    _mm256_storeu_ps(y + v * d + column, low[v]);
    _mm256_storeu_ps(y + v * d + column + 8, high[v]);
  }
}

void multiply_edge(std::size_t d, const float* rows, const float* x, std::size_t vectors, std::size_t column,
                   float* y) {
  for (std::size_t v = 0; v < vectors; ++v) {
    for (std::size_t c = column; c < d; ++c) {
      float accumulator = 0.0f;
      for (std::size_t k = 0; k < d; ++k) accumulator = std::fma(x[v * d + k], rows[k * d + c], accumulator);
      y[v * d + c] = accumulator;
    }
  }
}

void multiply_by_rows_fma(std::int64_t n, int dim, const float* rows, const float* in, float* out) {
  const auto d = static_cast<std::size_t>(dim);
  const auto count = static_cast<std::size_t>(n);
  const std::size_t tiled_width = d - d % kTileWidth;
  std::vector<float> batch(kTileVectors * d);  // a copy of the inputs: in may alias out
  for (std::size_t first = 0; first < count; first += kTileVectors) {
    const std::size_t vectors = std::min(kTileVectors, count - first);
    std::copy_n(in + first * d, vectors * d, batch.data());
    float* y = out + first * d;
    std::size_t column = 0;
    if (vectors == kTileVectors) {
      for (; column < tiled_width; column += kTileWidth) multiply_tile(d, rows, batch.data(), column, y);
    }
    multiply_edge(d, rows, batch.data(), vectors, column, y);
  }
}

}  // namespace

bool hadamard_rows_avx2(int log_n, const rotation_kernels::HadamardRows& rows) {
  switch (log_n) {
    case 3: return hadamard_rows_in_registers<Avx2Floats, 3>(rows);
    case 4: return hadamard_rows_in_registers<Avx2Floats, 4>(rows);
    case 5: return hadamard_rows_in_registers<Avx2Floats, 5>(rows);
    case 6: return hadamard_rows_in_registers<Avx2Floats, 6>(rows);
    case 7: return hadamard_rows_128_dispatch(rows);
  }
  assert(false && "log_n outside the AVX2 register kernel's range");
  return false;
}

void fwht_normalized_avx2(float* x, int log_n) {
  assert(log_n >= kMinLogInRegisters && log_n <= 30);
  if (log_n <= kMaxLogInRegisters) {
    rotation_kernels::HadamardRows row;
    row.n = 1;
    row.in = x;
    row.out = x;
    hadamard_rows_avx2(log_n, row);
  } else {
    fwht_normalized_in_memory(x, log_n);
  }
}

void multiply_by_rows_avx2(std::int64_t n, int dim, const float* rows, const float* in, float* out) {
  multiply_by_rows_fma(n, dim, rows, in, out);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
