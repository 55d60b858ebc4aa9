// Monte Carlo machinery and published constants for TurboQuant's theorems
// (arXiv:2504.19874, Theorems 1-3; the numpy reproduction, turboquant-explained and FlashQuant's notes:
// docs/SOURCES.md). See bounds.h.
#include "theory/bounds.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/rng.h"
#include "quant/codebook.h"
#include "quant/qjl.h"
#include "quant/quantizer.h"

namespace tqlab {
namespace {

double dot(int n, const double* a, const double* b) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Fills v with N(0, I) draws until its norm is usable (a zero draw has
// probability 0 but would make the direction undefined), then returns the norm.
double fill_gaussian(Rng& rng, int dim, double* v) {
  double norm2 = 0;
  while (norm2 < 1e-300) {
    for (int i = 0; i < dim; ++i) v[i] = rng.gaussian();
    norm2 = dot(dim, v, v);
  }
  return std::sqrt(norm2);
}

}  // namespace

// ---------------------------------------------------------------------------
// Statistics

void RunningStats::add(double value) {
  ++count_;
  const double delta = value - mean_;
  mean_ += delta / static_cast<double>(count_);
  sum_squared_deviations_ += delta * (value - mean_);
}

double RunningStats::variance() const {
  return count_ < 2 ? 0.0 : sum_squared_deviations_ / static_cast<double>(count_ - 1);
}

Estimate RunningStats::estimate() const {
  Estimate result;
  result.samples = count_;
  result.mean = mean_;
  result.standard_error = count_ < 2 ? 0.0 : std::sqrt(variance() / static_cast<double>(count_));
  return result;
}

double z_score(const Estimate& measured, double expected) {
  const double difference = measured.mean - expected;
  if (difference == 0) return 0;
  if (measured.standard_error == 0) return difference > 0 ? INFINITY : -INFINITY;
  return difference / measured.standard_error;
}

Histogram::Histogram(double lo, double hi, int bins)
    : lo_(lo), hi_(hi), width_((hi - lo) / bins), counts_(static_cast<std::size_t>(std::max(bins, 1)), 0) {
  assert(lo < hi && bins >= 1);
}

void Histogram::add(double value) {
  assert(!std::isnan(value));
  if (value < lo_) {
    ++below_;
  } else if (value >= hi_) {
    ++above_;
  } else {
    // A value just below hi can round to index bins(); it belongs to the last bin.
    const auto bin = std::min(static_cast<std::size_t>((value - lo_) / width_), counts_.size() - 1);
    ++counts_[bin];
  }
}

std::int64_t Histogram::total() const {
  std::int64_t sum = below_ + above_;
  for (std::int64_t count : counts_) sum += count;
  return sum;
}

// ---------------------------------------------------------------------------
// Samplers and quantization in the rotated frame

void sample_unit_vector(Rng& rng, int dim, double* u) {
  const double norm = fill_gaussian(rng, dim, u);
  for (int i = 0; i < dim; ++i) u[i] /= norm;
}

void sample_unit_pair(Rng& rng, int dim, double inner_product, double* x, double* y) {
  assert(dim >= 2 && std::fabs(inner_product) <= 1);
  sample_unit_vector(rng, dim, x);
  // w: a Gaussian draw with its component along x removed is isotropic in x's
  // orthogonal complement, so its direction is uniform there. y is built in
  // place: first w, then the combination.
  double norm2 = 0;
  while (norm2 < 1e-300) {
    fill_gaussian(rng, dim, y);
    const double along = dot(dim, y, x);
    for (int i = 0; i < dim; ++i) y[i] -= along * x[i];
    norm2 = dot(dim, y, y);
  }
  const double across = std::sqrt(1 - inner_product * inner_product) / std::sqrt(norm2);
  for (int i = 0; i < dim; ++i) y[i] = inner_product * x[i] + across * y[i];
}

void quantize_coordinates(const Codebook& codebook, const double* u, double* out) {
  for (int i = 0; i < codebook.dim; ++i) out[i] = codebook.centroids[static_cast<std::size_t>(codebook.code_of(u[i]))];
}

double coordinate_quantization_error(const Codebook& codebook, const double* u) {
  double error = 0;
  for (int i = 0; i < codebook.dim; ++i) {
    const double difference = u[i] - codebook.centroids[static_cast<std::size_t>(codebook.code_of(u[i]))];
    error += difference * difference;
  }
  return error;
}

double qjl_estimate_sample(Rng& rng, int projections, double residual_norm, double y_dot_residual) {
  if (residual_norm == 0) return 0;
  // c = cos(angle between y and r); rounding may push |c| a hair above 1.
  const double c = std::clamp(y_dot_residual / residual_norm, -1.0, 1.0);
  double sum_abs = 0;
  for (int i = 0; i < projections; ++i) sum_abs += std::fabs(rng.gaussian());
  const double signed_sum = std::sqrt(static_cast<double>(projections)) * rng.gaussian();
  const double projected = c * sum_abs + std::sqrt(1 - c * c) * signed_sum;
  return std::sqrt(std::numbers::pi / 2) / projections * residual_norm * projected;
}

double qjl_estimate_reference(const QjlSketch& sketch, const float* y, const float* residual) {
  const int dim = sketch.dim();
  std::vector<std::uint8_t> signs(static_cast<std::size_t>(sketch.projections()));
  sketch.sketch(residual, signs.data());
  double norm2 = 0;
  for (int i = 0; i < dim; ++i) norm2 += static_cast<double>(residual[i]) * residual[i];
  std::vector<float> estimate(static_cast<std::size_t>(dim), 0.0f);
  sketch.add_estimate(signs.data(), static_cast<float>(std::sqrt(norm2)), estimate.data());
  double result = 0;
  for (int i = 0; i < dim; ++i) result += static_cast<double>(y[i]) * estimate[static_cast<std::size_t>(i)];
  return result;
}

double qjl_conditional_variance(int projections, double residual_norm, double y_dot_residual) {
  return (std::numbers::pi / 2 * residual_norm * residual_norm - y_dot_residual * y_dot_residual) / projections;
}

// ---------------------------------------------------------------------------
// Estimators

InnerProductSampler::InnerProductSampler(int dim, int bits, int projections)
    : dim_(dim),
      bits_(bits),
      projections_(projections),
      codebook_(&lloyd_max_codebook(dim, bits, CodebookDistribution::beta)),
      prod_codebook_(bits > 1 ? &lloyd_max_codebook(dim, bits - 1, CodebookDistribution::beta) : nullptr),
      alpha_(codebook_->alpha),
      x_(static_cast<std::size_t>(dim)),
      y_(x_.size()),
      quantized_(x_.size()) {
  if (projections < 1) fail("QJL projections must be at least 1, got {}", projections);
}

InnerProductSample InnerProductSampler::sample(Rng& rng, double inner_product) {
  double* x = x_.data();
  double* y = y_.data();
  double* quantized = quantized_.data();
  sample_unit_pair(rng, dim_, inner_product, x, y);
  // The truth is the pair's own inner product, not ρ: they differ by rounding only,
  // but measuring against the value actually drawn keeps that out of the error.
  const double truth = dot(dim_, x, y);

  InnerProductSample result;
  quantize_coordinates(*codebook_, x, quantized);
  const double mse_estimate = dot(dim_, y, quantized);
  result.error[static_cast<int>(InnerProductEstimator::biased)] = mse_estimate - truth;
  result.error[static_cast<int>(InnerProductEstimator::debiased)] = mse_estimate / alpha_ - truth;

  double prod_mse_estimate = 0;
  if (prod_codebook_ != nullptr) {
    quantize_coordinates(*prod_codebook_, x, quantized);
    prod_mse_estimate = dot(dim_, y, quantized);
    double norm2 = 0;
    for (int i = 0; i < dim_; ++i) norm2 += (x[i] - quantized[i]) * (x[i] - quantized[i]);
    result.residual_norm2 = norm2;
  } else {
    result.residual_norm2 = dot(dim_, x, x);
  }
  result.y_dot_residual = truth - prod_mse_estimate;
  const double residual_norm = std::sqrt(result.residual_norm2);
  const double sketch = qjl_estimate_sample(rng, projections_, residual_norm, result.y_dot_residual);
  result.error[static_cast<int>(InnerProductEstimator::prod)] = prod_mse_estimate + sketch - truth;
  result.prod_conditional_variance = qjl_conditional_variance(projections_, residual_norm, result.y_dot_residual);
  return result;
}

// ---------------------------------------------------------------------------
// Measurements

Estimate measure_coordinate_distortion(const Codebook& codebook, std::int64_t samples, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<double> u(static_cast<std::size_t>(codebook.dim));
  RunningStats stats;
  for (std::int64_t s = 0; s < samples; ++s) {
    sample_unit_vector(rng, codebook.dim, u.data());
    stats.add(coordinate_quantization_error(codebook, u.data()));
  }
  return stats.estimate();
}

Estimate measure_quantizer_distortion(const Quantizer& quantizer, int dim, std::int64_t samples,
                                      int tokens_per_context, std::uint64_t seed) {
  assert(tokens_per_context >= 1);
  Rng rng(seed);
  RunningStats stats;
  std::vector<float> x, decoded;
  for (std::int64_t first = 0, batch = 0; first < samples; first += tokens_per_context, ++batch) {
    const std::int64_t tokens = std::min<std::int64_t>(tokens_per_context, samples - first);
    x.resize(static_cast<std::size_t>(tokens * dim));
    decoded.resize(x.size());
    for (float& value : x) value = static_cast<float>(rng.gaussian());
    const QuantContext context{derive_seed({seed, static_cast<std::uint64_t>(batch)}), Role::key, 0, 0};
    const EncodedTensor encoded = quantizer.encode(tokens, dim, x.data(), context);
    quantizer.decode(encoded, context, decoded.data());
    for (std::int64_t t = 0; t < tokens; ++t) {
      double error = 0, norm2 = 0;
      for (int c = 0; c < dim; ++c) {
        const double value = x[static_cast<std::size_t>(t * dim + c)];
        const double difference = value - decoded[static_cast<std::size_t>(t * dim + c)];
        error += difference * difference;
        norm2 += value * value;
      }
      stats.add(error / norm2);
    }
  }
  return stats.estimate();
}

InnerProductErrorStats measure_quantizer_inner_product_error(const Quantizer& quantizer, int dim,
                                                             double inner_product, std::int64_t trials,
                                                             std::uint64_t seed) {
  std::vector<double> x(static_cast<std::size_t>(dim)), y(x.size());
  std::vector<float> x_float(x.size()), decoded(x.size());
  RunningStats error, scaled_squared_error;
  for (std::int64_t trial = 0; trial < trials; ++trial) {
    const auto trial_seed = static_cast<std::uint64_t>(trial);
    Rng rng(derive_seed({seed, trial_seed}));
    sample_unit_pair(rng, dim, inner_product, x.data(), y.data());
    for (int i = 0; i < dim; ++i)
      x_float[static_cast<std::size_t>(i)] = static_cast<float>(x[static_cast<std::size_t>(i)]);
    const QuantContext context{derive_seed({seed, trial_seed, 1}), Role::key, 0, 0};
    const EncodedTensor encoded = quantizer.encode(1, dim, x_float.data(), context);
    quantizer.decode(encoded, context, decoded.data());
    // Against the float vector actually encoded, so float rounding of x is not counted as error.
    double estimate = 0, truth = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      estimate += y[i] * decoded[i];
      truth += y[i] * x_float[i];
    }
    error.add(estimate - truth);
    scaled_squared_error.add(dim * (estimate - truth) * (estimate - truth));
  }
  return {error.estimate(), scaled_squared_error.estimate()};
}

// ---------------------------------------------------------------------------
// Bounds and published constants

double shannon_lower_bound(int bits) { return std::pow(4.0, -bits); }

double theorem1_upper_bound(int bits) { return std::sqrt(3.0) * std::numbers::pi / 2 * shannon_lower_bound(bits); }

double theorem2_scaled_upper_bound(int bits) {
  return std::sqrt(3.0) * std::numbers::pi * std::numbers::pi * shannon_lower_bound(bits);
}

double theorem2_scaled_lower_bound(int bits) { return shannon_lower_bound(bits); }

double lloyd_max_d_mse(int dim, int bits) {
  if (bits == 0) return 1.0;
  return dim * lloyd_max_codebook(dim, bits, CodebookDistribution::beta).marginal_mse_per_coord;
}

double prod_formula(int dim, int bits, int projections) {
  return static_cast<double>(dim) / projections * std::numbers::pi / 2 * lloyd_max_d_mse(dim, bits - 1);
}

std::optional<double> paper_d_mse(int bits) {
  static constexpr double kValues[] = {0.36, 0.117, 0.03, 0.009};
  if (bits < 1 || bits > 4) return std::nullopt;
  return kValues[bits - 1];
}

std::optional<double> paper_prod_constant(int bits) {
  static constexpr double kValues[] = {1.57, 0.56, 0.18, 0.047};
  if (bits < 1 || bits > 4) return std::nullopt;
  return kValues[bits - 1];
}

std::optional<PublishedConstantCheck> check_paper_prod_constant(int dim, int bits) {
  const auto published = paper_prod_constant(bits);
  if (!published) return std::nullopt;
  PublishedConstantCheck check;
  check.published = *published;
  check.formula = prod_formula(dim, bits, dim);
  check.relative_difference = check.published / check.formula - 1;
  check.disagrees = std::fabs(check.relative_difference) > kPublishedConstantTolerance;
  return check;
}

double PublishedValue::half_unit() const { return 0.5 * std::pow(10.0, -decimals); }

std::optional<PublishedValue> reproduction_d_mse(int bits) {
  static constexpr PublishedValue kValues[] = {{0.3609, 4}, {0.1160, 4}, {0.0340, 4}, {0.0093, 4}};
  if (bits < 1 || bits > 4) return std::nullopt;
  return kValues[bits - 1];
}

std::array<PublishedValue, 2> reproduction_two_bit_centroids() {
  return {PublishedValue{0.453, 3}, PublishedValue{1.51, 2}};
}

std::optional<PublishedValue> reproduction_inner_product_error(int bits, InnerProductEstimator estimator,
                                                          double inner_product) {
  // [bits − 1][estimator][⟨y, x⟩ = 0, 0.5, 0.9], as printed in the numpy reproduction.
  static constexpr PublishedValue kTable[4][3][3] = {
      {{{0.24, 2}, {4.33, 2}, {13.6, 1}}, {{0.58, 2}, {0.45, 2}, {0.16, 2}}, {{1.57, 2}, {1.33, 2}, {0.76, 2}}},
      {{{0.10, 2}, {0.54, 2}, {1.53, 2}}, {{0.13, 2}, {0.15, 2}, {0.18, 2}}, {{0.56, 2}, {0.53, 2}, {0.46, 2}}},
      {{{0.033, 3}, {0.080, 3}, {0.19, 2}}, {{0.035, 3}, {0.046, 3}, {0.070, 3}}, {{0.18, 2}, {0.18, 2}, {0.17, 2}}},
      {{{0.009, 3}, {0.016, 3}, {0.031, 3}},
       {{0.009, 3}, {0.013, 3}, {0.022, 3}},
       {{0.053, 3}, {0.053, 3}, {0.052, 3}}},
  };
  static constexpr double kInnerProducts[] = {0.0, 0.5, 0.9};
  if (bits < 1 || bits > 4) return std::nullopt;
  for (int column = 0; column < 3; ++column) {
    if (std::fabs(inner_product - kInnerProducts[column]) < 1e-12) {
      return kTable[bits - 1][static_cast<int>(estimator)][column];
    }
  }
  return std::nullopt;
}

}  // namespace tqlab
