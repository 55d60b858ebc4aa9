#include "quant/qjl.h"

#include <bit>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

#include "core/kernel_set.h"
#include "core/rng.h"
#include "quant/qjl_simd.h"

namespace tqlab {
namespace {

// Why a float sign can stand for the reference's double one. Let e be the
// exact S_i . r, A = sum_j |S_ij r_j| <= ||S_i|| ||r|| (Cauchy–Schwarz), n =
// dim. Any float evaluation p of the dot product, in any order, by fused or
// separate multiply and add (at most 2n roundings on any term's path), has
// |p - e| <= gamma(2n) A + n 2^-149 (gamma(k) = k u / (1 - k u), u = 2^-24;
// Higham, "Accuracy and Stability of Numerical Algorithms", 2002, §3.1; the
// last term covers products that underflow). The reference's double sum d has
// |d - e| <= gamma_double(n) A (products of floats are exact in double and
// never underflow). So when |p| > (gamma(2n) + gamma_double(n)) A + n 2^-149,
// e, d and p share one sign and d != 0: the reference's `d >= 0` is `p > 0`.
// The margin below is twice that bound (||S_i|| and ||r|| are themselves
// rounded); a NaN or infinite p, r or bound fails the test and takes the
// reference's path, as does any row within the margin (a few in ten
// thousand for Gaussian rows).
constexpr double kUnitRoundoffFloat = 0x1p-24;
constexpr double kUnitRoundoffDouble = 0x1p-53;
constexpr double kSmallestSubnormalFloat = 0x1p-149;
// Above this the gamma bounds lose meaning; every row then takes the double path.
constexpr int kMaxCertifiedDim = 1 << 20;

double gamma(double terms, double unit_roundoff) { return terms * unit_roundoff / (1.0 - terms * unit_roundoff); }

double double_dot(int dim, const float* row, const float* residual) {
  double projection = 0.0;
  for (int j = 0; j < dim; ++j) projection += static_cast<double>(row[j]) * residual[j];
  return projection;
}

// The plain form of the float projections: S^T's columns, which GCC vectorizes across rows.
void project_portable(std::int64_t n, int dim, int m, const float* transposed, const float* residuals,
                      float* projections) {
  for (std::int64_t v = 0; v < n; ++v) {
    float* sums = projections + v * m;
    const float* residual = residuals + v * dim;
    for (int i = 0; i < m; ++i) sums[i] = 0.0f;
    for (int j = 0; j < dim; ++j) {
      const float r = residual[j];
      const float* column = transposed + static_cast<std::size_t>(j) * static_cast<std::size_t>(m);
      for (int i = 0; i < m; ++i) sums[i] += column[i] * r;
    }
  }
}

void project(std::int64_t n, int dim, int m, const float* transposed, const float* residuals, float* projections) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::qjl_project_avx512(n, dim, m, transposed, residuals, projections);
    case KernelSet::avx2: return simd::qjl_project_avx2(n, dim, m, transposed, residuals, projections);
#endif
    default: return project_portable(n, dim, m, transposed, residuals, projections);
  }
}

// out[j] += signed_scales[i] * S_ij, rows in order: the reference's arithmetic.
void add_signed_rows_portable(std::int64_t n, int dim, int m, const float* matrix, const float* signed_scales,
                              float* out, std::int64_t out_stride) {
  for (std::int64_t v = 0; v < n; ++v) {
    float* row_out = out + v * out_stride;
    for (int i = 0; i < m; ++i) {
      const float* row = matrix + static_cast<std::size_t>(i) * static_cast<std::size_t>(dim);
      const float signed_scale = signed_scales[v * m + i];
      for (int j = 0; j < dim; ++j) row_out[j] += signed_scale * row[j];
    }
  }
}

void add_signed_rows(std::int64_t n, int dim, int m, const float* matrix, const float* signed_scales, float* out,
                     std::int64_t out_stride) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::qjl_add_signed_rows_avx512(n, dim, m, matrix, signed_scales, out, out_stride);
    case KernelSet::avx2: return simd::qjl_add_signed_rows_avx2(n, dim, m, matrix, signed_scales, out, out_stride);
#endif
    default: return add_signed_rows_portable(n, dim, m, matrix, signed_scales, out, out_stride);
  }
}

// sqrt(pi/2) / m * ||r||, rounded to float once (as the reference's double
// `scale` is, sign by sign).
float estimate_scale(int projections, float residual_norm) {
  return static_cast<float>(std::sqrt(std::numbers::pi / 2.0) / projections * residual_norm);
}

}  // namespace

QjlSketch::QjlSketch(int dim, int projections, std::uint64_t seed)
    : dim_(dim), projections_(projections), matrix_(static_cast<std::size_t>(dim) * projections) {
  Rng rng(seed);
  for (float& entry : matrix_) entry = static_cast<float>(rng.gaussian());
  const auto m = static_cast<std::size_t>(projections);
  const auto n = static_cast<std::size_t>(dim);
  transposed_.resize(matrix_.size());
  margins_.resize(m);
  const double gamma_sum = gamma(2.0 * dim, kUnitRoundoffFloat) + gamma(dim, kUnitRoundoffDouble);
  for (std::size_t i = 0; i < m; ++i) {
    double squares = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      const float entry = matrix_[i * n + j];
      transposed_[j * m + i] = entry;
      squares += static_cast<double>(entry) * entry;
    }
    // Rounded up to float (and 2^-20 more), so that the float margin is never below the bound.
    margins_[i] = static_cast<float>(2.0 * gamma_sum * std::sqrt(squares) * (1.0 + 0x1p-20));
  }
}

std::size_t QjlSketch::bytes() const {
  return (matrix_.size() + transposed_.size()) * sizeof(float) + margins_.size() * sizeof(float);
}

void QjlSketch::sketch_reference(const float* residual, std::uint8_t* signs) const {
  for (int i = 0; i < projections_; ++i) {
    const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
    signs[i] = double_dot(dim_, row, residual) >= 0.0 ? 1 : 0;
  }
}

void QjlSketch::sketch(std::int64_t n, const float* residuals, const float* residual_norms, std::uint8_t* signs) const {
  if (n <= 0) return;
  if (dim_ > kMaxCertifiedDim) {
    for (std::int64_t v = 0; v < n; ++v) sketch_reference(residuals + v * dim_, signs + v * projections_);
    return;
  }
  const std::size_t cells = static_cast<std::size_t>(n) * static_cast<std::size_t>(projections_);
  constexpr std::size_t kOnStack = 512;
  float on_stack[kOnStack];
  std::vector<float> on_heap;
  float* all_projections = on_stack;
  if (cells > kOnStack) {
    on_heap.resize(cells);
    all_projections = on_heap.data();
  }
  project(n, dim_, projections_, transposed_.data(), residuals, all_projections);
  for (std::int64_t v = 0; v < n; ++v) {
    const float* residual = residuals + v * dim_;
    const float* projections = all_projections + v * projections_;
    std::uint8_t* row_signs = signs + v * projections_;
    // ||r|| in double: squares of floats neither overflow nor underflow there.
    // Four sums for speed; the margin does not depend on their order. The
    // margin's own roundings (relative 2^-24 each, the given norm's among
    // them) are covered by its factor 2; a product that underflows loses at
    // most 2^-149, covered by the underflow term; one that overflows (or a
    // NaN) makes every comparison false. The test runs in float (vectorizes).
    float residual_norm = 0.0f;
    if (residual_norms != nullptr) {
      residual_norm = residual_norms[v];
    } else {
      double squares[4] = {0.0, 0.0, 0.0, 0.0};
      int j = 0;
      for (; j + 4 <= dim_; j += 4) {
        for (int k = 0; k < 4; ++k) squares[k] += static_cast<double>(residual[j + k]) * residual[j + k];
      }
      for (; j < dim_; ++j) squares[0] += static_cast<double>(residual[j]) * residual[j];
      residual_norm = static_cast<float>(std::sqrt((squares[0] + squares[1]) + (squares[2] + squares[3])));
    }
    const auto underflow_margin = static_cast<float>(2.0 * dim_ * kSmallestSubnormalFloat);
    // Locals, and no stores in the test's loop: the byte stores to signs could
    // alias anything, and would keep GCC from vectorizing it.
    const float* margins = margins_.data();
    const int m = projections_;
    int uncertain = 0;
    for (int i = 0; i < m; ++i) uncertain += std::fabs(projections[i]) > margins[i] * residual_norm + underflow_margin ? 0 : 1;
    for (int i = 0; i < m; ++i) row_signs[i] = projections[i] > 0.0f ? 1 : 0;
    if (uncertain == 0) continue;
    for (int i = 0; i < projections_; ++i) {
      const float projection = projections[i];
      if (!(std::fabs(projection) > margins_[static_cast<std::size_t>(i)] * residual_norm + underflow_margin)) {
        const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
        row_signs[i] = double_dot(dim_, row, residual) >= 0.0 ? 1 : 0;
      }
    }
  }
}

void QjlSketch::add_estimate_reference(const std::uint8_t* signs, float residual_norm, float* out) const {
  const double scale = std::sqrt(std::numbers::pi / 2.0) / projections_ * residual_norm;
  for (int i = 0; i < projections_; ++i) {
    const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
    const float signed_scale = static_cast<float>(signs[i] ? scale : -scale);
    for (int j = 0; j < dim_; ++j) out[j] += signed_scale * row[j];
  }
}

void QjlSketch::add_estimate(std::int64_t n, const std::uint8_t* signs, const float* residual_norms, float* out,
                             std::int64_t out_stride) const {
  if (n <= 0) return;
  // +-scale per (row, sign), so that the kernels' inner loop only loads and
  // broadcasts. -scale is scale with its sign bit flipped (float(-x) =
  // -float(x), as the reference rounds it), set without a branch: random
  // signs mispredict half the time.
  const std::size_t cells = static_cast<std::size_t>(n) * static_cast<std::size_t>(projections_);
  std::vector<float> signed_scales(cells);
  for (std::int64_t v = 0; v < n; ++v) {
    const auto scale_bits = std::bit_cast<std::uint32_t>(estimate_scale(projections_, residual_norms[v]));
    const std::uint8_t* row_signs = signs + v * projections_;
    float* row_scales = signed_scales.data() + v * projections_;
    for (int i = 0; i < projections_; ++i) {
      row_scales[i] = std::bit_cast<float>(scale_bits ^ (static_cast<std::uint32_t>(row_signs[i] == 0) << 31));
    }
  }
  add_signed_rows(n, dim_, projections_, matrix_.data(), signed_scales.data(), out, out_stride);
}

}  // namespace tqlab
