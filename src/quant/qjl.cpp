#include "quant/qjl.h"

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
void project_portable(int dim, int m, const float* transposed, const float* residual, float* projections) {
  for (int i = 0; i < m; ++i) projections[i] = 0.0f;
  for (int j = 0; j < dim; ++j) {
    const float r = residual[j];
    const float* column = transposed + static_cast<std::size_t>(j) * static_cast<std::size_t>(m);
    for (int i = 0; i < m; ++i) projections[i] += column[i] * r;
  }
}

void project(int dim, int m, const float* transposed, const float* residual, float* projections) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::qjl_project_avx512(dim, m, transposed, residual, projections);
    case KernelSet::avx2: return simd::qjl_project_avx2(dim, m, transposed, residual, projections);
#endif
    default: return project_portable(dim, m, transposed, residual, projections);
  }
}

// out[j] += (signs[i] ? scale : -scale) * S_ij, rows in order: the
// reference's arithmetic (float(-scale) is -float(scale)).
void add_signed_rows_portable(int dim, int m, const float* matrix, const std::uint8_t* signs, float scale, float* out) {
  for (int i = 0; i < m; ++i) {
    const float* row = matrix + static_cast<std::size_t>(i) * static_cast<std::size_t>(dim);
    const float signed_scale = signs[i] != 0 ? scale : -scale;
    for (int j = 0; j < dim; ++j) out[j] += signed_scale * row[j];
  }
}

void add_signed_rows(int dim, int m, const float* matrix, const std::uint8_t* signs, float scale, float* out) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::qjl_add_signed_rows_avx512(dim, m, matrix, signs, scale, out);
    case KernelSet::avx2: return simd::qjl_add_signed_rows_avx2(dim, m, matrix, signs, scale, out);
#endif
    default: return add_signed_rows_portable(dim, m, matrix, signs, scale, out);
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
    margins_[i] = 2.0 * gamma_sum * std::sqrt(squares);
  }
}

std::size_t QjlSketch::bytes() const {
  return (matrix_.size() + transposed_.size()) * sizeof(float) + margins_.size() * sizeof(double);
}

void QjlSketch::sketch_reference(const float* residual, std::uint8_t* signs) const {
  for (int i = 0; i < projections_; ++i) {
    const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
    signs[i] = double_dot(dim_, row, residual) >= 0.0 ? 1 : 0;
  }
}

void QjlSketch::sketch(const float* residual, std::uint8_t* signs) const {
  if (dim_ > kMaxCertifiedDim) return sketch_reference(residual, signs);
  constexpr int kOnStack = 512;
  float on_stack[kOnStack];
  std::vector<float> on_heap;
  float* projections = on_stack;
  if (projections_ > kOnStack) {
    on_heap.resize(static_cast<std::size_t>(projections_));
    projections = on_heap.data();
  }
  project(dim_, projections_, transposed_.data(), residual, projections);
  // ||r|| in double: squares of floats neither overflow nor underflow there.
  // Four sums for speed; the margin does not depend on their order.
  double squares[4] = {0.0, 0.0, 0.0, 0.0};
  int j = 0;
  for (; j + 4 <= dim_; j += 4) {
    for (int k = 0; k < 4; ++k) squares[k] += static_cast<double>(residual[j + k]) * residual[j + k];
  }
  for (; j < dim_; ++j) squares[0] += static_cast<double>(residual[j]) * residual[j];
  const double residual_norm = std::sqrt((squares[0] + squares[1]) + (squares[2] + squares[3]));
  const double underflow_margin = 2.0 * dim_ * kSmallestSubnormalFloat;
  for (int i = 0; i < projections_; ++i) {
    const double projection = projections[i];
    const double margin = margins_[static_cast<std::size_t>(i)] * residual_norm + underflow_margin;
    if (std::fabs(projection) > margin) {
      signs[i] = projection > 0.0 ? 1 : 0;
    } else {
      const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
      signs[i] = double_dot(dim_, row, residual) >= 0.0 ? 1 : 0;
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

void QjlSketch::add_estimate(const std::uint8_t* signs, float residual_norm, float* out) const {
  add_signed_rows(dim_, projections_, matrix_.data(), signs, estimate_scale(projections_, residual_norm), out);
}

}  // namespace tqlab
