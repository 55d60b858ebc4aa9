#include "cli/blas_kernels.h"

#include <unistd.h>

#include <cstdlib>

namespace tqlab::cli {

void pin_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
  if (::setenv("OPENBLAS_CORETYPE", "Haswell", 1) != 0) return;
  // tqlab runs BLAS on its own workers' threads, one call each (core/parallel.h):
  // OpenBLAS's thread pool would only wait and yield beside them.
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
  ::execv("/proc/self/exe", argv);
  // exec failed (no /proc): carry on with whatever OpenBLAS chose.
}

}  // namespace tqlab::cli
