#include "eval/exp_kernels.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace tqlab {
void exp_array(int n, const double* x, double* out) {
  for (int i = 0; i < n; ++i) out[i] = exp_kernel(x[i]);
}

}  // namespace tqlab
