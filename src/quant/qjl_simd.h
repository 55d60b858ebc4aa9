// The instruction-set forms of the QJL kernels (qjl.h), internal to qjl.cpp
// and qjl_certify.cpp, which call the one core/kernel_set.h chooses; the caller has checked that
// the CPU supports it. n vectors at a time: the matrix is read once for
// several of them (qjl_kernels.inc).
//   *_avx2    AVX2 + FMA (qjl_avx2.cpp)
//   *_avx512  AVX-512    (qjl_avx512.cpp)
#pragma once

#include <cstdint>

#include "core/simd_target.h"

namespace tqlab::simd {

/// The kernels read a matrix (rows x cols) in panels of kQjlPanel columns, so
/// that one panel (32 KiB at 128 rows) stays in L1 while every vector of a
/// batch uses it: the panel of columns [first, first + width), width =
/// min(kQjlPanel, cols - first), is the rows x width block at panels +
/// first * rows, row r of it at + r * width. (64: one AVX-512 tile, two AVX2 tiles.)
inline constexpr int kQjlPanel = 64;

#if TQLAB_X86_KERNELS
/// projections[v * m + i] ~= sum_j S^T[j][i] * residuals[v * dim + j]
/// for v < n, i < m, in float by fused multiply-adds, each in index order: an
/// approximation whose error the caller bounds (qjl.cpp), not a bit-exact
/// result. panels: S^T (dim x m) in panels; residuals: n x dim; projections: n x m.
void qjl_project_avx2(long n, int dim, int m, const float* panels, const float* residuals, float* projections);
void qjl_project_avx512(long n, int dim, int m, const float* panels, const float* residuals, float* projections);

/// out[v * out_stride + j] += signed_scales[v * m + i] * S[i][j]
/// for i = 0 .. m-1 in order, one rounded product and one rounded sum each:
/// bit for bit the plain loop. panels: S (m x dim) in panels; signed_scales:
/// n x m (the caller's +-scale per sign); out: n rows of dim floats, out_stride apart.
void qjl_add_signed_rows_avx2(long n, int dim, int m, const float* panels, const float* signed_scales, float* out,
                              long out_stride);
void qjl_add_signed_rows_avx512(long n, int dim, int m, const float* panels, const float* signed_scales, float* out,
                                long out_stride);

/// signed_scales[v * m + i] = scales[v] when signs[v * m + i] != 0, else
/// -scales[v] (its sign bit flipped): qjl.cpp's signed_scales_portable bit for
/// bit. signs: n x m bytes; scales: n; signed_scales: n x m.
void qjl_signed_scales_avx2(long n, int m, const std::uint8_t* signs, const float* scales, float* signed_scales);
void qjl_signed_scales_avx512(long n, int m, const std::uint8_t* signs, const float* scales, float* signed_scales);

/// certify_signs (quant/qjl_certify.h), W rows per compare: the same signs and
/// the same uncertain flags. projections: n x m; margins: m; residual_norms:
/// n; signs: n x m; uncertain: n.
void qjl_certify_signs_avx2(long n, int m, const float* projections, const float* margins,
                            const float* residual_norms, float underflow_margin, std::uint8_t* signs,
                            std::uint8_t* uncertain);
void qjl_certify_signs_avx512(long n, int m, const float* projections, const float* margins,
                              const float* residual_norms, float underflow_margin, std::uint8_t* signs,
                              std::uint8_t* uncertain);
#endif

}  // namespace tqlab::simd
