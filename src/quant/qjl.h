// QJL: the 1-bit quantized Johnson–Lindenstrauss sketch of a residual
// (Zandieh, Daliri, Han, "QJL", 2024; TurboQuant_prod, arXiv:2504.19874 §3.2;
// the numpy reproduction). For a residual r in R^B and S in R^{m x B} with i.i.d. N(0, 1)
// entries, the code is sign(S r) (m bits) plus ||r||, and
//     r_hat = sqrt(pi/2) / m * ||r|| * S^T sign(S r)
// is an unbiased estimate of r: E[<y, r_hat>] = <y, r> for every y.
//
// Both directions have a plain reference (*_reference, the definition) and a
// fast form that returns the same bits on every instruction set
// (core/kernel_set.h; tests/qjl_test.cpp holds them together):
//   sketch        S r in float SIMD (any summation order), each sign kept
//                 where the float result is certified to have the sign of
//                 the reference's double sum, else that row in double;
//   add_estimate  S^T sign(S r) accumulated 8 or 16 channels at a time, every
//                 channel adding the same products in the same row order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tqlab {

class QjlSketch {
 public:
  /// S: `projections` x `dim` Gaussian entries from Rng(seed).gaussian(), row by row.
  QjlSketch(int dim, int projections, std::uint64_t seed);

  int dim() const { return dim_; }
  int projections() const { return projections_; }

  /// signs[i] = 1 when (S r)_i >= 0, else 0, (S r)_i summed in double in index
  /// order (sketch_reference), bit for bit. residual: dim floats; signs: projections bytes.
  void sketch(const float* residual, std::uint8_t* signs) const { sketch(1, residual, signs); }

  /// sketch for n residuals at once (faster: the matrix is read once for
  /// several). residuals: n x dim floats; signs: n x projections bytes.
  void sketch(std::int64_t n, const float* residuals, std::uint8_t* signs) const {
    sketch(n, residuals, nullptr, signs);
  }

  /// The same, given each residual's norm as vector_norm (or row_norms)
  /// computes it, which spares computing it again (the norm only sizes the
  /// margin that decides when a float sign is trusted; a norm off by more than
  /// a rounding error could change signs). residual_norms: n floats, or null.
  void sketch(std::int64_t n, const float* residuals, const float* residual_norms, std::uint8_t* signs) const;

  /// out += sqrt(pi/2) / m * residual_norm * S^T (2 signs - 1), rows added in
  /// order, one float product and one float sum per term (add_estimate_reference,
  /// bit for bit). out: dim floats.
  void add_estimate(const std::uint8_t* signs, float residual_norm, float* out) const {
    add_estimate(1, signs, &residual_norm, out, dim_);
  }

  /// add_estimate for n rows at once. signs: n x projections bytes;
  /// residual_norms: n; out: n rows of dim floats, row v at out + v * out_stride.
  void add_estimate(std::int64_t n, const std::uint8_t* signs, const float* residual_norms, float* out,
                    std::int64_t out_stride) const;

  /// The definitions, for tests: one double dot product per row; one row at a time.
  void sketch_reference(const float* residual, std::uint8_t* signs) const;
  void add_estimate_reference(const std::uint8_t* signs, float residual_norm, float* out) const;

  /// The projection matrix S, row-major (projections x dim).
  const std::vector<float>& matrix() const { return matrix_; }

  /// Bytes held (S, S^T and S in the kernels' panel layout, the per-row margins), for the codec cache's budget.
  std::size_t bytes() const;

 private:
  int dim_;
  int projections_;
  std::vector<float> matrix_;      // projections x dim
  std::vector<float> projection_panels_;  // S^T (dim x projections) in panels (qjl_simd.h): a lane holds one row's sum
  std::vector<float> estimate_panels_;    // S (projections x dim) in panels: a lane holds one channel's sum
  std::vector<float> margins_;     // per row i: 2 (gamma_float + gamma_double) ||S_i||, see sketch()
};

}  // namespace tqlab
