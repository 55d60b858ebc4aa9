// The AVX-512 forms of the fp16 array conversions (core/dtype_arrays.h),
// sixteen values per instruction. Compiled in a target region
// (core/simd_target.h): every #include comes before it.
//
// The same bits as float_to_half / half_to_float (core/dtype.cpp):
// - vcvtps2ph with rounding mode 0 rounds to nearest, ties to even, makes
//   fp16 subnormals and overflows to +-Inf (round to nearest never gives the
//   largest finite value instead), and quiets a NaN keeping its top ten
//   payload bits, as float_to_half does;
// - vcvtph2ps is exact, but sets the quiet bit of a signaling NaN, which
//   half_to_float keeps as stored: lanes with all exponent bits set (Inf,
//   NaN) are rebuilt from their bits as half_to_float does.
// tests/dtype_arrays_test.cpp checks both against the scalar functions.
#include "core/dtype_arrays_simd.h"

#include <cstddef>
#include <cstdint>

#include "core/simd_intrinsics.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX512_BEGIN

namespace tqlab::simd {
namespace {

// Lanes [0, count) of sixteen, count <= 16.
inline __mmask16 first_lanes(std::size_t count) {
  return static_cast<__mmask16>((1u << count) - 1u);
}

inline __m256i halves_of(__m512 values) {
  return _mm512_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

inline __m512 floats_of(__m256i halves) {
  const __m512 converted = _mm512_cvtph_ps(halves);
  const __m512i bits = _mm512_cvtepu16_epi32(halves);
  const __m512i exponent_mask = _mm512_set1_epi32(0x7C00);
  const __mmask16 inf_or_nan =
      _mm512_cmpeq_epi32_mask(_mm512_and_si512(bits, exponent_mask), exponent_mask);
  if (inf_or_nan == 0) return converted;
  // sign, all-ones exponent, the ten payload bits at the top of the float's mantissa.
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x8000)), 16);
  const __m512i payload = _mm512_slli_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x3FF)), 13);
  const __m512i special = _mm512_or_si512(_mm512_or_si512(sign, payload), _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_blend_ps(inf_or_nan, converted, _mm512_castsi512_ps(special));
}

}  // namespace

void floats_to_halves_avx512(std::size_t n, const float* in, std::uint16_t* out) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), halves_of(_mm512_loadu_ps(in + i)));
  }
  if (i < n) {
    const __mmask16 lanes = first_lanes(n - i);
    _mm256_mask_storeu_epi16(out + i, lanes, halves_of(_mm512_maskz_loadu_ps(lanes, in + i)));
  }
}

void halves_to_floats_avx512(std::size_t n, const std::uint16_t* in, float* out) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, floats_of(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  }
  if (i < n) {
    const __mmask16 lanes = first_lanes(n - i);
    _mm512_mask_storeu_ps(out + i, lanes, floats_of(_mm256_maskz_loadu_epi16(lanes, in + i)));
  }
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
