#include "quant/qjl.h"

#include <cmath>
#include <numbers>

#include "core/rng.h"

namespace tqlab {

QjlSketch::QjlSketch(int dim, int projections, std::uint64_t seed)
    : dim_(dim), projections_(projections), matrix_(static_cast<std::size_t>(dim) * projections) {
  Rng rng(seed);
  for (float& entry : matrix_) entry = static_cast<float>(rng.gaussian());
}

void QjlSketch::sketch(const float* residual, std::uint8_t* signs) const {
  for (int i = 0; i < projections_; ++i) {
    const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
    double projection = 0.0;
    for (int j = 0; j < dim_; ++j) projection += static_cast<double>(row[j]) * residual[j];
    signs[i] = projection >= 0.0 ? 1 : 0;
  }
}

void QjlSketch::add_estimate(const std::uint8_t* signs, float residual_norm, float* out) const {
  const double scale = std::sqrt(std::numbers::pi / 2.0) / projections_ * residual_norm;
  for (int i = 0; i < projections_; ++i) {
    const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
    const float signed_scale = static_cast<float>(signs[i] ? scale : -scale);
    for (int j = 0; j < dim_; ++j) out[j] += signed_scale * row[j];
  }
}

}  // namespace tqlab
