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

void qjl_project_avx2(int dim, int m, const float* transposed, const float* residual, float* projections) {
  project<Floats>(dim, m, transposed, residual, projections);
}

void qjl_add_signed_rows_avx2(int dim, int m, const float* matrix, const std::uint8_t* signs, float scale,
                              float* out) {
  add_signed_rows<Floats>(dim, m, matrix, signs, scale, out);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
