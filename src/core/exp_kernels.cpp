#include "core/exp_kernels.h"

#include "core/exp_kernels_simd.h"
#include "core/kernel_set.h"

namespace tqlab {

void exp_array(int n, const double* x, double* out) {
#if TQLAB_X86_KERNELS
  switch (active_kernel_set()) {
    case KernelSet::avx512:
      return simd::exp_array_avx512(n, x, out);
    case KernelSet::avx2:
      return simd::exp_array_avx2(n, x, out);
    case KernelSet::portable:
      break;
  }
#endif
  for (int i = 0; i < n; ++i) out[i] = exp_kernel(x[i]);
}

}  // namespace tqlab
