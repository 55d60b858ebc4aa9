// The AVX2 forms of the fp16 array conversions (core/dtype_arrays.h), eight
// values per F16C instruction. Compiled in the AVX2 target region
// (core/simd_target.h: AVX2 + FMA + F16C): every #include comes before it.
//
// The same bits as float_to_half / half_to_float (core/dtype.cpp), for the
// reasons dtype_arrays_avx512.cpp gives: vcvtps2ph with rounding mode 0 is
// float_to_half; vcvtph2ps is half_to_float except that it quiets a
// signaling NaN, so lanes with all exponent bits set are rebuilt from their
// bits. The last n % 8 values take the plain loops.
// tests/dtype_arrays_test.cpp checks both against the scalar functions.
#include <cstddef>
#include <cstdint>

#include "core/dtype_arrays.h"
#include "core/dtype_arrays_simd.h"
#include "core/simd_intrinsics.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX2_BEGIN

namespace tqlab::simd {
namespace {

inline __m128i halves_of(__m256 values) {
  return _mm256_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

inline __m256 floats_of(__m128i halves) {
  const __m256 converted = _mm256_cvtph_ps(halves);
  const __m256i bits = _mm256_cvtepu16_epi32(halves);
  const __m256i exponent_mask = _mm256_set1_epi32(0x7C00);
  const __m256i inf_or_nan = _mm256_cmpeq_epi32(_mm256_and_si256(bits, exponent_mask), exponent_mask);
  if (_mm256_testz_si256(inf_or_nan, inf_or_nan)) return converted;
  // sign, all-ones exponent, the ten payload bits at the top of the float's mantissa.
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x8000)), 16);
  const __m256i payload = _mm256_slli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x3FF)), 13);
  const __m256i special = _mm256_or_si256(_mm256_or_si256(sign, payload), _mm256_set1_epi32(0x7F800000));
  return _mm256_blendv_ps(converted, _mm256_castsi256_ps(special), _mm256_castsi256_ps(inf_or_nan));
}

}  // namespace

void floats_to_halves_avx2(std::size_t n, const float* in, std::uint16_t* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), halves_of(_mm256_loadu_ps(in + i)));
  }
  floats_to_halves_reference(n - i, in + i, out + i);
}

void halves_to_floats_avx2(std::size_t n, const std::uint16_t* in, float* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, floats_of(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
  halves_to_floats_reference(n - i, in + i, out + i);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
