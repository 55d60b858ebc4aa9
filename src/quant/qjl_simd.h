// The instruction-set forms of the QJL kernels (qjl.h), internal to qjl.cpp,
// which calls the one core/kernel_set.h chooses; the caller has checked that
// the CPU supports it.
//   *_avx2    AVX2 + FMA (qjl_avx2.cpp)
//   *_avx512  AVX-512    (qjl_avx512.cpp)
#pragma once

#include <cstdint>

#include "core/simd_target.h"

namespace tqlab::simd {

#if TQLAB_X86_KERNELS
/// projections[i] ~= sum_j transposed[j * m + i] * residual[j] for i < m, in
/// float by fused multiply-adds, each in index order: an approximation whose
/// error the caller bounds (qjl.cpp), not a bit-exact result.
/// transposed: dim x m (S^T); residual: dim floats; projections: m floats.
void qjl_project_avx2(int dim, int m, const float* transposed, const float* residual, float* projections);
void qjl_project_avx512(int dim, int m, const float* transposed, const float* residual, float* projections);

/// out[j] += (signs[i] ? scale : -scale) * matrix[i * dim + j] for i = 0 .. m-1
/// in order, one rounded product and one rounded sum each: bit for bit the
/// plain loop. matrix: m x dim; signs: m bytes (0 or 1); out: dim floats.
void qjl_add_signed_rows_avx2(int dim, int m, const float* matrix, const std::uint8_t* signs, float scale, float* out);
void qjl_add_signed_rows_avx512(int dim, int m, const float* matrix, const std::uint8_t* signs, float scale,
                                float* out);
#endif

}  // namespace tqlab::simd
