// The AVX2 + FMA forms of the rotation kernels (rotation_simd.h): the fast
// Walsh–Hadamard transform in registers and in memory, and the Haar
// rotation's dense product in fused multiply-add tiles. Compiled in a target
// region (core/simd_target.h): every #include comes before it.

#include "quant/rotation_simd.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>
#include <cstddef>
#include <vector>

#include <immintrin.h>

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX2_BEGIN

namespace tqlab::simd {
namespace {

using rotation_kernels::fwht_scale;
using rotation_kernels::kMaxLogInRegisters;
using rotation_kernels::kMinLogInRegisters;

// ---------------------------------------------------------------------------
// Fast Walsh–Hadamard transform

// The same network for n >= 8, eight floats per register. a + (-b) is bitwise
// a - b and b + a is a + b, so every path below matches butterfly_stage and
// scale_all bit for bit; the scale is applied to each finished sum, which
// rounds exactly as a separate final pass would.

// Spans 1, 2 and 4 stay inside one register: permute the partner into place,
// negate the lanes that take a difference, add.
inline __m256 butterflies_within_register(__m256 v) {
  const __m256 negate_odd =
      _mm256_castsi256_ps(_mm256_setr_epi32(0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN));
  const __m256 negate_upper_pairs =
      _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, INT32_MIN, INT32_MIN, 0, 0, INT32_MIN, INT32_MIN));
  const __m256 negate_upper_half =
      _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, 0, 0, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN));
  v = _mm256_add_ps(_mm256_permute_ps(v, 0b10'11'00'01), _mm256_xor_ps(v, negate_odd));
  v = _mm256_add_ps(_mm256_permute_ps(v, 0b01'00'11'10), _mm256_xor_ps(v, negate_upper_pairs));
  return _mm256_add_ps(_mm256_permute2f128_ps(v, v, 0x01), _mm256_xor_ps(v, negate_upper_half));
}

// n <= 128: all n/8 registers stay live, so the whole transform is one load
// and one store per register (the loops have constant bounds and unroll).
// Optional ±1 signs are applied as the input is loaded (pre_signs: x ∘ s
// first) or as the result is stored (post_signs: s ∘ y last); a product with
// ±1 is exact, so this matches separate passes bit for bit. All loads come
// before any store, so in == out is fine.
template <int LogN>
void fwht_normalized_in_registers(const float* in, float* out, float scale, const float* pre_signs,
                                  const float* post_signs) {
  constexpr int kRegisters = (1 << LogN) / 8;
  __m256 v[kRegisters];
#pragma GCC unroll 16
  for (int i = 0; i < kRegisters; ++i) {
    __m256 loaded = _mm256_loadu_ps(in + 8 * i);
    if (pre_signs != nullptr) loaded = _mm256_mul_ps(loaded, _mm256_loadu_ps(pre_signs + 8 * i));
    v[i] = butterflies_within_register(loaded);
  }
#pragma GCC unroll 4
  for (int half = 1; half < kRegisters; half *= 2) {
#pragma GCC unroll 16
    for (int i = 0; i < kRegisters; ++i) {
      if ((i & half) != 0) continue;
      const __m256 a = v[i];
      const __m256 b = v[i + half];
      v[i] = _mm256_add_ps(a, b);
      v[i + half] = _mm256_sub_ps(a, b);
    }
  }
  const __m256 scale_vector = _mm256_set1_ps(scale);
#pragma GCC unroll 16
  for (int i = 0; i < kRegisters; ++i) {
    __m256 result = _mm256_mul_ps(v[i], scale_vector);
    if (post_signs != nullptr) result = _mm256_mul_ps(result, _mm256_loadu_ps(post_signs + 8 * i));
    _mm256_storeu_ps(out + 8 * i, result);
  }
}

void fwht_normalized_in_registers(const float* in, float* out, int log_n, const float* pre_signs,
                                  const float* post_signs) {
  const float scale = fwht_scale(log_n);
  switch (log_n) {
    case 3: return fwht_normalized_in_registers<3>(in, out, scale, pre_signs, post_signs);
    case 4: return fwht_normalized_in_registers<4>(in, out, scale, pre_signs, post_signs);
    case 5: return fwht_normalized_in_registers<5>(in, out, scale, pre_signs, post_signs);
    case 6: return fwht_normalized_in_registers<6>(in, out, scale, pre_signs, post_signs);
    case 7: return fwht_normalized_in_registers<7>(in, out, scale, pre_signs, post_signs);
  }
  assert(false && "log_n outside the register kernel's range");
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
    fwht_normalized_in_registers<kMaxLogInRegisters>(x + chunk, x + chunk, 1.0f, nullptr, nullptr);
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

void fwht_normalized_avx2(float* x, int log_n) {
  assert(log_n >= kMinLogInRegisters && log_n <= 30);
  if (log_n <= kMaxLogInRegisters) {
    fwht_normalized_in_registers(x, x, log_n, nullptr, nullptr);
  } else {
    fwht_normalized_in_memory(x, log_n);
  }
}

void hadamard_rows_avx2(std::int64_t n, int log_n, const float* pre_signs, const float* post_signs, const float* in,
                        float* out) {
  const std::int64_t d = std::int64_t{1} << log_n;
  for (std::int64_t r = 0; r < n; ++r) {
    fwht_normalized_in_registers(in + r * d, out + r * d, log_n, pre_signs, post_signs);
  }
}

void multiply_by_rows_avx2(std::int64_t n, int dim, const float* rows, const float* in, float* out) {
  multiply_by_rows_fma(n, dim, rows, in, out);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
