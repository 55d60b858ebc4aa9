#include "quant/qjl_certify.h"

#include <cmath>

#include "core/kernel_set.h"
#include "quant/qjl_simd.h"

namespace tqlab {

void certify_signs_reference(std::int64_t n, int m, const float* projections, const float* margins,
                             const float* residual_norms, float underflow_margin, std::uint8_t* signs,
                             std::uint8_t* uncertain) {
  for (std::int64_t v = 0; v < n; ++v) {
    const float* row_projections = projections + v * m;
    std::uint8_t* row_signs = signs + v * m;
    // Counted, not branched on, and no stores in this loop (the byte stores
    // could alias anything): GCC vectorizes it.
    int failed = 0;
    for (int i = 0; i < m; ++i) {
      failed += std::fabs(row_projections[i]) > margins[i] * residual_norms[v] + underflow_margin ? 0 : 1;
    }
    for (int i = 0; i < m; ++i) row_signs[i] = row_projections[i] > 0.0f ? 1 : 0;
    uncertain[v] = failed != 0 ? 1 : 0;
  }
}

void certify_signs(std::int64_t n, int m, const float* projections, const float* margins,
                   const float* residual_norms, float underflow_margin, std::uint8_t* signs,
                   std::uint8_t* uncertain) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512:
      return simd::qjl_certify_signs_avx512(n, m, projections, margins, residual_norms, underflow_margin, signs,
                                            uncertain);
    case KernelSet::avx2:
      return simd::qjl_certify_signs_avx2(n, m, projections, margins, residual_norms, underflow_margin, signs,
                                          uncertain);
#endif
    default:
      return certify_signs_reference(n, m, projections, margins, residual_norms, underflow_margin, signs, uncertain);
  }
}

}  // namespace tqlab
