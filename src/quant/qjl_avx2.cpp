// The AVX2 + FMA, eight floats per register, form of the QJL kernels (qjl_simd.h; the loops: qjl_kernels.inc).
// Compiled in a target region (core/simd_target.h): every #include comes before it.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/simd_intrinsics.h"
#include "quant/qjl_simd.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX2_BEGIN

namespace tqlab::simd {
namespace {

struct Floats {
  using Type = __m256;
  // 4 registers x 2 vectors: 8 accumulators, 4 loaded, 2 broadcasts (16 registers).
  static constexpr int kTile = 4;
  static constexpr int kVectors = 2;
  static constexpr int kWidth = 8;
  static Type load(const float* at) { return _mm256_loadu_ps(at); }
  static void store(float* at, Type v) { _mm256_storeu_ps(at, v); }
  static Type add(Type a, Type b) { return _mm256_add_ps(a, b); }
  static Type mul(Type a, Type b) { return _mm256_mul_ps(a, b); }
  static Type fmadd(Type a, Type b, Type c) { return _mm256_fmadd_ps(a, b, c); }
  static Type broadcast(float value) { return _mm256_set1_ps(value); }
  static Type zero() { return _mm256_setzero_ps(); }
  static Type abs(Type v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  static unsigned greater_mask(Type a, Type b) {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ)));
  }
  static Type signed_by(const std::uint8_t* signs, Type scale) {
    std::int64_t eight;
    std::memcpy(&eight, signs, sizeof eight);
    const __m256i bytes = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(eight));
    const __m256i negative = _mm256_cmpeq_epi32(bytes, _mm256_setzero_si256());
    const __m256i flip = _mm256_and_si256(negative, _mm256_set1_epi32(INT32_MIN));
    return _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(scale), flip));
  }
  // Bit k of the mask to byte k: the mask copied into every byte, byte k
  // masked to bit k, then 0x7f added (no carry between bytes) so that bit 7
  // of byte k is bit k.
  static void store_mask_bytes(std::uint8_t* at, unsigned mask) {
    const std::uint64_t spread = (mask * 0x0101010101010101u) & 0x8040201008040201u;
    const std::uint64_t bytes = ((spread + 0x7f7f7f7f7f7f7f7fu) >> 7) & 0x0101010101010101u;
    std::memcpy(at, &bytes, sizeof bytes);
  }
};

#include "quant/qjl_kernels.inc"

}  // namespace

void qjl_project_avx2(long n, int dim, int m, const float* panels, const float* residuals, float* projections) {
  project<Floats>(n, dim, m, panels, residuals, projections);
}

void qjl_add_signed_rows_avx2(long n, int dim, int m, const float* panels, const float* signed_scales, float* out,
                              long out_stride) {
  add_signed_rows<Floats>(n, dim, m, panels, signed_scales, out, out_stride);
}

void qjl_signed_scales_avx2(long n, int m, const std::uint8_t* signs, const float* scales, float* signed_scales) {
  tqlab::simd::signed_scales<Floats>(n, m, signs, scales, signed_scales);
}

void qjl_certify_signs_avx2(long n, int m, const float* projections, const float* margins,
                            const float* residual_norms, float underflow_margin, std::uint8_t* signs,
                            std::uint8_t* uncertain) {
  certify_signs<Floats>(n, m, projections, margins, residual_norms, underflow_margin, signs, uncertain);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
