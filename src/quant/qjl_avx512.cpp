// The AVX-512, sixteen floats per register, form of the QJL kernels (qjl_simd.h; the loops: qjl_kernels.inc).
// Compiled in a target region (core/simd_target.h): every #include comes before it.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/simd_intrinsics.h"
#include "quant/qjl_simd.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX512_BEGIN

namespace tqlab::simd {
namespace {

struct Floats {
  using Type = __m512;
  // 4 registers x 4 vectors: 16 accumulators, 4 loaded, broadcasts (32 registers).
  static constexpr int kTile = 4;
  static constexpr int kVectors = 4;
  static constexpr int kWidth = 16;
  static Type load(const float* at) { return _mm512_loadu_ps(at); }
  static void store(float* at, Type v) { _mm512_storeu_ps(at, v); }
  static Type add(Type a, Type b) { return _mm512_add_ps(a, b); }
  static Type mul(Type a, Type b) { return _mm512_mul_ps(a, b); }
  static Type fmadd(Type a, Type b, Type c) { return _mm512_fmadd_ps(a, b, c); }
  static Type broadcast(float value) { return _mm512_set1_ps(value); }
  static Type zero() { return _mm512_setzero_ps(); }
  static Type abs(Type v) { return _mm512_abs_ps(v); }
  static unsigned greater_mask(Type a, Type b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static Type signed_by(const std::uint8_t* signs, Type scale) {
    const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(signs)));
    const __mmask16 negative = _mm512_testn_epi32_mask(bytes, bytes);
    const __m512i bits = _mm512_castps_si512(scale);
    return _mm512_castsi512_ps(_mm512_mask_xor_epi32(bits, negative, bits, _mm512_set1_epi32(INT32_MIN)));
  }
  static void store_mask_bytes(std::uint8_t* at, unsigned mask) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(at), _mm_maskz_set1_epi8(static_cast<__mmask16>(mask), 1));
  }
};

#include "quant/qjl_kernels.inc"

}  // namespace

void qjl_project_avx512(long n, int dim, int m, const float* panels, const float* residuals, float* projections) {
  project<Floats>(n, dim, m, panels, residuals, projections);
}

void qjl_add_signed_rows_avx512(long n, int dim, int m, const float* panels, const float* signed_scales, float* out,
                              long out_stride) {
  add_signed_rows<Floats>(n, dim, m, panels, signed_scales, out, out_stride);
}

void qjl_signed_scales_avx512(long n, int m, const std::uint8_t* signs, const float* scales, float* signed_scales) {
  tqlab::simd::signed_scales<Floats>(n, m, signs, scales, signed_scales);
}

void qjl_certify_signs_avx512(long n, int m, const float* projections, const float* margins,
                            const float* residual_norms, float underflow_margin, std::uint8_t* signs,
                            std::uint8_t* uncertain) {
  certify_signs<Floats>(n, m, projections, margins, residual_norms, underflow_margin, signs, uncertain);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
