// QJL: the 1-bit quantized Johnson–Lindenstrauss sketch of a residual
// (Zandieh, Daliri, Han, "QJL", 2024; TurboQuant_prod, arXiv:2504.19874 §3.2;
// seed 001). For a residual r in R^B and S in R^{m x B} with i.i.d. N(0, 1)
// entries, the code is sign(S r) (m bits) plus ||r||, and
//     r_hat = sqrt(pi/2) / m * ||r|| * S^T sign(S r)
// is an unbiased estimate of r: E[<y, r_hat>] = <y, r> for every y.
#pragma once

#include <cstdint>
#include <vector>

namespace tqlab {

class QjlSketch {
 public:
  /// S: `projections` x `dim` Gaussian entries from Rng(seed).gaussian(), row by row.
  QjlSketch(int dim, int projections, std::uint64_t seed);

  int dim() const { return dim_; }
  int projections() const { return projections_; }

  /// signs[i] = 1 when (S r)_i >= 0, else 0. residual: dim floats; signs: projections bytes.
  void sketch(const float* residual, std::uint8_t* signs) const;

  /// out += sqrt(pi/2) / m * residual_norm * S^T (2 signs - 1). out: dim floats.
  void add_estimate(const std::uint8_t* signs, float residual_norm, float* out) const;

  /// The projection matrix S, row-major (projections x dim).
  const std::vector<float>& matrix() const { return matrix_; }

 private:
  int dim_;
  int projections_;
  std::vector<float> matrix_;
};

}  // namespace tqlab
