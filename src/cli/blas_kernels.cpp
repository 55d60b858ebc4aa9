#include "cli/blas_kernels.h"

#include <unistd.h>

#include <cstdlib>

namespace tqlab::cli {

void pin_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
  if (::setenv("OPENBLAS_CORETYPE", "Haswell", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // exec failed (no /proc): carry on with whatever OpenBLAS chose.
}

}  // namespace tqlab::cli
