// The instruction-set forms of the QJL kernels (qjl.h), internal to qjl.cpp,
// which calls the one core/kernel_set.h chooses; the caller has checked that
// the CPU supports it. n vectors at a time: the matrix is read once for
// several of them (qjl_kernels.inc).
//   *_avx2    AVX2 + FMA (qjl_avx2.cpp)
//   *_avx512  AVX-512    (qjl_avx512.cpp)
#pragma once

#include <cstdint>

#include "core/simd_target.h"

namespace tqlab::simd {

#if TQLAB_X86_KERNELS
/// projections[v * m + i] ~= sum_j transposed[j * m + i] * residuals[v * dim + j]
/// for v < n, i < m, in float by fused multiply-adds, each in index order: an
/// approximation whose error the caller bounds (qjl.cpp), not a bit-exact
/// result. transposed: dim x m (S^T); residuals: n x dim; projections: n x m.
void qjl_project_avx2(long n, int dim, int m, const float* transposed, const float* residuals, float* projections);
void qjl_project_avx512(long n, int dim, int m, const float* transposed, const float* residuals, float* projections);

/// out[v * out_stride + j] += signed_scales[v * m + i] * matrix[i * dim + j]
/// for i = 0 .. m-1 in order, one rounded product and one rounded sum each:
/// bit for bit the plain loop. matrix: m x dim; signed_scales: n x m (the
/// caller's +-scale per sign); out: n rows of dim floats, out_stride apart.
void qjl_add_signed_rows_avx2(long n, int dim, int m, const float* matrix, const float* signed_scales, float* out,
                              long out_stride);
void qjl_add_signed_rows_avx512(long n, int dim, int m, const float* matrix, const float* signed_scales, float* out,
                                long out_stride);
#endif

}  // namespace tqlab::simd
