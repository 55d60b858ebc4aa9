// The AVX-512 form of the Hadamard rotation's in-register transform
// (rotation_simd.h), 16 floats per register, for 16 ... 256 floats: a head dim
// of 128 is eight registers instead of sixteen, and four of its seven
// butterfly stages stay inside a register. Other sizes, the in-memory
// transform and the Haar product keep their AVX2 + FMA forms. Compiled in a
// target region (core/simd_target.h): every #include comes before it.
//
// The same network as butterfly_stage and scale_all in rotation.cpp, so the
// same bits: a + (-b) is bitwise a - b and b + a is a + b, and the scale is
// applied to each finished sum, which rounds exactly as a final pass would.
//
// GCC 12 reports a false -Wuninitialized / -Wmaybe-uninitialized inside its
// own AVX-512 intrinsics (their deliberately undefined merge operands, GCC bug
// 105593); it must be silenced before <immintrin.h> is first included.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "quant/rotation_simd.h"

#include <cassert>
#include <cstdint>

#include <immintrin.h>

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX512_BEGIN

namespace tqlab::simd {
namespace {

using rotation_kernels::fwht_scale;

// Lanes whose sign flips: the upper partner of each pair at span 1, 2, 4, 8.
inline __m512 negate_lanes(__m512 v, __mmask16 lanes) {
  return _mm512_castsi512_ps(
      _mm512_mask_xor_epi32(_mm512_castps_si512(v), lanes, _mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)));
}

// Spans 1, 2, 4 and 8 inside one register: move the partner into place,
// negate the lanes that take a difference, add.
inline __m512 butterflies_within_register(__m512 v) {
  v = _mm512_add_ps(_mm512_permute_ps(v, 0b10'11'00'01), negate_lanes(v, 0xAAAA));
  v = _mm512_add_ps(_mm512_permute_ps(v, 0b01'00'11'10), negate_lanes(v, 0xCCCC));
  v = _mm512_add_ps(_mm512_shuffle_f32x4(v, v, 0b10'11'00'01), negate_lanes(v, 0xF0F0));
  return _mm512_add_ps(_mm512_shuffle_f32x4(v, v, 0b01'00'11'10), negate_lanes(v, 0xFF00));
}

// 2^LogN floats in 2^LogN / 16 live registers: one load and one store each.
// Optional ±1 signs are applied as the input is loaded (pre_signs) or as the
// result is stored (post_signs); a product with ±1 is exact. All loads come
// before any store, so in == out is fine.
template <int LogN>
void fwht_normalized_in_registers(const float* in, float* out, float scale, const float* pre_signs,
                                  const float* post_signs) {
  constexpr int kRegisters = (1 << LogN) / 16;
  __m512 v[kRegisters];
#pragma GCC unroll 16
  for (int i = 0; i < kRegisters; ++i) {
    __m512 loaded = _mm512_loadu_ps(in + 16 * i);
    if (pre_signs != nullptr) loaded = _mm512_mul_ps(loaded, _mm512_loadu_ps(pre_signs + 16 * i));
    v[i] = butterflies_within_register(loaded);
  }
#pragma GCC unroll 4
  for (int half = 1; half < kRegisters; half *= 2) {
#pragma GCC unroll 16
    for (int i = 0; i < kRegisters; ++i) {
      if ((i & half) != 0) continue;
      const __m512 a = v[i];
      const __m512 b = v[i + half];
      v[i] = _mm512_add_ps(a, b);
      v[i + half] = _mm512_sub_ps(a, b);
    }
  }
  const __m512 scale_vector = _mm512_set1_ps(scale);
#pragma GCC unroll 16
  for (int i = 0; i < kRegisters; ++i) {
    __m512 result = _mm512_mul_ps(v[i], scale_vector);
    if (post_signs != nullptr) result = _mm512_mul_ps(result, _mm512_loadu_ps(post_signs + 16 * i));
    _mm512_storeu_ps(out + 16 * i, result);
  }
}

template <int LogN>
void hadamard_rows(std::int64_t n, const float* pre_signs, const float* post_signs, const float* in, float* out) {
  constexpr std::int64_t kDim = std::int64_t{1} << LogN;
  const float scale = fwht_scale(LogN);
  for (std::int64_t r = 0; r < n; ++r) {
    fwht_normalized_in_registers<LogN>(in + r * kDim, out + r * kDim, scale, pre_signs, post_signs);
  }
}

}  // namespace

void hadamard_rows_avx512(std::int64_t n, int log_n, const float* pre_signs, const float* post_signs,
                          const float* in, float* out) {
  switch (log_n) {
    case 4: return hadamard_rows<4>(n, pre_signs, post_signs, in, out);
    case 5: return hadamard_rows<5>(n, pre_signs, post_signs, in, out);
    case 6: return hadamard_rows<6>(n, pre_signs, post_signs, in, out);
    case 7: return hadamard_rows<7>(n, pre_signs, post_signs, in, out);
    case 8: return hadamard_rows<8>(n, pre_signs, post_signs, in, out);
  }
  assert(false && "log_n outside the AVX-512 register kernel's range");
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
