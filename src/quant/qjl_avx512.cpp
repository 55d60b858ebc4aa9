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

#include "quant/float_lanes_avx512.inc"

// 4 registers x 4 vectors: 16 accumulators, 4 loaded, broadcasts (32 registers).
struct Floats : Avx512Floats {
  static constexpr int kTile = 4;
  static constexpr int kVectors = 4;
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
