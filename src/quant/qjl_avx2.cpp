// The AVX2 + FMA, eight floats per register, form of the QJL kernels (qjl_simd.h; the loops: qjl_kernels.inc).
// Compiled in a target region (core/simd_target.h): every #include comes before it.
#include <cstdint>

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
};

#include "quant/qjl_kernels.inc"

}  // namespace

void qjl_project_avx2(long n, int dim, int m, const float* transposed, const float* residuals, float* projections) {
  project<Floats>(n, dim, m, transposed, residuals, projections);
}

void qjl_add_signed_rows_avx2(long n, int dim, int m, const float* matrix, const float* signed_scales, float* out,
                              long out_stride) {
  add_signed_rows<Floats>(n, dim, m, matrix, signed_scales, out, out_stride);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
