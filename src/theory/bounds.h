// Monte Carlo machinery and published constants for checking TurboQuant's
// theory: samplers on the unit sphere, the three inner-product estimators,
// running statistics with standard errors and z-scores, and histograms.
// `tqlab verify-bounds` (theory/verify_bounds.h) and the tests share it.
//
// Sources: Zandieh, Daliri, Hadian, Mirrokni, "TurboQuant: Online Vector
// Quantization with Near-optimal Distortion Rate" (arXiv:2504.19874):
// Theorem 1 (D_mse <= √3·π/2 · 4^−b), Theorem 2 (D_prod of TurboQuant_prod
// and its table of constants), Theorem 3 (Shannon's lower bounds 4^−b and
// 4^−b/d); the numpy reproduction (the constants at d = 128, the erratum in Theorem 2's
// table, the inner-product table); turboquant-explained (the figures); FlashQuant's notes (bounds).
//
// The rotated frame. For a Haar-random rotation Π and fixed unit x, y the pair
// (Πx, Πy) is a uniformly random pair of unit vectors with the same inner
// product, and every quantity measured here is invariant under rotating x, y
// and the QJL matrix together. So the samplers draw that pair directly and
// quantize its coordinates with the codebook: the exact error distribution
// of the Haar pipeline at O(d) per sample, with no rotation matrix built.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/name_table.h"

namespace tqlab {

struct Codebook;
class QjlSketch;
class Quantizer;
class Rng;

// ---------------------------------------------------------------------------
// Statistics

/// A Monte Carlo mean and its standard error.
struct Estimate {
  std::int64_t samples = 0;
  double mean = 0;
  double standard_error = 0;  ///< sample standard deviation / √samples (0 with < 2 samples)
};

/// Mean and variance of a stream of values (Welford's update, so a long run of
/// nearly equal values loses no digits).
class RunningStats {
 public:
  void add(double value);

  std::int64_t count() const { return count_; }
  double mean() const { return mean_; }
  /// Sample variance (divides by n − 1); 0 with fewer than two values.
  double variance() const;
  Estimate estimate() const;

 private:
  std::int64_t count_ = 0;
  double mean_ = 0;
  double sum_squared_deviations_ = 0;
};

/// (measured.mean − expected) / measured.standard_error: how many standard
/// errors the measurement lies from the expected value. 0 when they are equal,
/// ±infinity when the standard error is 0 and they differ.
double z_score(const Estimate& measured, double expected);

/// Counts of values in `bins` equal-width bins over [lo, hi); values below lo
/// and at or above hi are counted apart, so every added value is counted once.
class Histogram {
 public:
  /// lo < hi, bins >= 1.
  Histogram(double lo, double hi, int bins);

  /// Adds one value (not NaN): to bin floor((value − lo) / width), or below / above.
  void add(double value);

  double lo() const { return lo_; }
  double hi() const { return hi_; }
  int bins() const { return static_cast<int>(counts_.size()); }
  /// bins() counts; bin i covers [lo + i·width, lo + (i + 1)·width).
  const std::vector<std::int64_t>& counts() const { return counts_; }
  std::int64_t below() const { return below_; }
  std::int64_t above() const { return above_; }
  /// Every value added: the bins plus below and above.
  std::int64_t total() const;

 private:
  double lo_, hi_, width_;
  std::vector<std::int64_t> counts_;
  std::int64_t below_ = 0, above_ = 0;
};

// ---------------------------------------------------------------------------
// Samplers and the quantization steps in the rotated frame

/// u: dim doubles, a uniform random unit vector (a normalized N(0, I) draw,
/// Muller 1959). dim >= 1.
void sample_unit_vector(Rng& rng, int dim, double* u);

/// x, y: dim doubles each. x uniform on the sphere; y = ρ x + √(1 − ρ²) w with
/// w uniform on the unit sphere orthogonal to x, so ‖y‖ = 1, ⟨y, x⟩ = ρ
/// (to rounding) and (x, y) is a uniformly random pair with that inner product.
/// dim >= 2, −1 <= inner_product (ρ) <= 1.
void sample_unit_pair(Rng& rng, int dim, double inner_product, double* x, double* y);

/// out[i] = the codebook level nearest u[i] (Codebook::code_of).
/// u, out: codebook.dim doubles; in == out is allowed.
void quantize_coordinates(const Codebook& codebook, const double* u, double* out);

/// ‖u − Q(u)‖² for coordinate-wise quantization of u (codebook.dim doubles).
/// For uniform unit u its mean is the codebook's D_mse.
double coordinate_quantization_error(const Codebook& codebook, const double* u);

/// One draw of the QJL estimate of ⟨y, r⟩ with a fresh m x d matrix S of
/// i.i.d. N(0, 1) entries: √(π/2)/m · ‖r‖ · ⟨S y, sign(S r)⟩.
/// Only the projections of S's rows onto span(y, r) enter it, and
/// Σ_i ⟨s_i, y⟩ sign⟨s_i, r⟩ = c Σ_i |g_i| + √(1 − c²) Σ_i h_i sign(g_i) (‖y‖ = 1,
/// c = ⟨y, r⟩/‖r‖, g, h i.i.d. N(0, 1)), whose second sum is N(0, m):
/// the same distribution from m + 1 Gaussian draws instead of m·d.
/// For unit y; projections m >= 1; residual_norm 0 gives 0.
double qjl_estimate_sample(Rng& rng, int projections, double residual_norm, double y_dot_residual);

/// Reference for qjl_estimate_sample with the sketch's explicit matrix:
/// ⟨y, r̂⟩ with r̂ = √(π/2)/m · ‖r‖ · Sᵀ sign(S r) (QjlSketch::sketch and
/// add_estimate). y, residual: sketch.dim() floats.
double qjl_estimate_reference(const QjlSketch& sketch, const float* y, const float* residual);

/// Var(QJL estimate | y, r) over S for unit y:
/// (1/m)·[(π/2)·‖r‖² − ⟨y, r⟩²]. (Each term ⟨s_i, y⟩ sign⟨s_i, r⟩ has second
/// moment ‖y‖² = 1 and mean √(2/π)·⟨y, r⟩/‖r‖.)
double qjl_conditional_variance(int projections, double residual_norm, double y_dot_residual);

// ---------------------------------------------------------------------------
// The inner-product estimators

/// The three ways of estimating ⟨y, x⟩ from b bits per coordinate that
/// the numpy reproduction compares: `biased` ⟨y, Q_b(x)⟩ (the MSE quantizer); `debiased`
/// ⟨y, Q_b(x)⟩ / α with α = E⟨Q_b(u), u⟩ = 1 − D_mse(b); `prod` (TurboQuant_prod)
/// ⟨y, Q_{b−1}(x)⟩ plus the QJL estimate of ⟨y, r⟩, r = x − Q_{b−1}(x) (at b = 1,
/// Q_0 = 0 and r = x: the pure 1-bit QJL sketch).
enum class InnerProductEstimator { biased = 0, debiased = 1, prod = 2 };
inline constexpr auto kInnerProductEstimatorNames = make_name_table<InnerProductEstimator>(
    {{InnerProductEstimator::biased, "biased"}, {InnerProductEstimator::debiased, "debiased"},
     {InnerProductEstimator::prod, "prod"}});
inline constexpr std::array<InnerProductEstimator, 3> kInnerProductEstimators = kInnerProductEstimatorNames.values();

/// "biased", "debiased", "prod".
inline std::string_view inner_product_estimator_name(InnerProductEstimator estimator) {
  return kInnerProductEstimatorNames.name(estimator);
}

/// One sample of all three estimators on one random pair (x, y).
struct InnerProductSample {
  /// estimate − ⟨y, x⟩, indexed by InnerProductEstimator.
  std::array<double, 3> error{};
  double residual_norm2 = 0;         ///< ‖r‖², r = x − Q_{b−1}(x) (prod's MSE stage)
  double y_dot_residual = 0;         ///< ⟨y, r⟩
  double prod_conditional_variance = 0;  ///< Var(prod's estimate | x, y), qjl_conditional_variance
};

/// Draws samples of the three estimators at (dim, bits) in the rotated frame,
/// using the beta Lloyd–Max codebooks of b and b − 1 bits and a fresh QJL
/// matrix of m projections per sample.
class InnerProductSampler {
 public:
  /// dim 2..4096, bits 1..8, projections >= 1 (the paper: m = d).
  InnerProductSampler(int dim, int bits, int projections);

  InnerProductSample sample(Rng& rng, double inner_product);

  int dim() const { return dim_; }
  int bits() const { return bits_; }
  int projections() const { return projections_; }
  /// α of the b-bit codebook, the debiased estimator's divisor.
  double alpha() const { return alpha_; }

 private:
  int dim_, bits_, projections_;
  const Codebook* codebook_;              ///< b bits
  const Codebook* prod_codebook_;         ///< b − 1 bits; nullptr at b = 1
  double alpha_;
  std::vector<double> x_, y_, quantized_;  ///< dim each
};

// ---------------------------------------------------------------------------
// Measurements

/// D_mse by the direct path: the mean of ‖u − Q(u)‖² over `samples` uniform
/// unit vectors u drawn from Rng(seed). samples >= 2.
Estimate measure_coordinate_distortion(const Codebook& codebook, std::int64_t samples, std::uint64_t seed);

/// D_mse through a real quantizer (encode → bytes → decode): the mean of
/// ‖x − x̃‖² / ‖x‖² over `samples` vectors x of `dim` i.i.d. N(0, 1) values
/// (uniform directions). They are encoded `tokens_per_context` at a time, each
/// batch with a fresh QuantContext seed derive_seed({seed, batch}) (so a fresh
/// rotation); given the rotation the rotated directions are i.i.d. uniform, so
/// the samples are independent and the standard error is valid.
Estimate measure_quantizer_distortion(const Quantizer& quantizer, int dim, std::int64_t samples,
                                      int tokens_per_context, std::uint64_t seed);

/// Inner-product error of a real quantizer.
struct InnerProductErrorStats {
  Estimate error;                  ///< ⟨y, x̃⟩ − ⟨y, x⟩
  Estimate scaled_squared_error;   ///< d · (⟨y, x̃⟩ − ⟨y, x⟩)²
};

/// Trial t draws a pair (x, y) with sample_unit_pair(Rng(derive_seed({seed, t}))),
/// encodes and decodes x alone with QuantContext seed derive_seed({seed, t, 1})
/// (fresh random objects per trial) and measures ⟨y, x̃⟩ − ⟨y, x⟩. trials >= 2.
InnerProductErrorStats measure_quantizer_inner_product_error(const Quantizer& quantizer, int dim,
                                                             double inner_product, std::int64_t trials,
                                                             std::uint64_t seed);

// ---------------------------------------------------------------------------
// Bounds and published constants

/// Theorem 1's upper bound on D_mse: √3·π/2 · 4^−b (Panter–Dite constant).
double theorem1_upper_bound(int bits);

/// Shannon's lower bound on D_mse (Theorem 3): 4^−b. Asymptotic in d: at d = 2
/// the Lloyd–Max codebook goes below it, at d = 3 it meets it exactly.
double shannon_lower_bound(int bits);

/// Theorem 2's bounds on d · D_prod for unit y: upper √3·π² · 4^−b, lower
/// (Theorem 3) 4^−b.
double theorem2_scaled_upper_bound(int bits);
double theorem2_scaled_lower_bound(int bits);

/// D_mse of the beta Lloyd–Max codebook of (dim, bits), with D_mse(0 bits) = 1
/// (nothing quantized: the residual is the whole unit vector).
double lloyd_max_d_mse(int dim, int bits);

/// Theorem 2's formula for d · D_prod at unit y, m projections, ⟨y, x⟩ → 0:
/// (d/m) · (π/2) · D_mse(b − 1).
double prod_formula(int dim, int bits, int projections);

/// The paper's D_mse values for b = 1..4 (0.36, 0.117, 0.03, 0.009); nullopt otherwise.
std::optional<double> paper_d_mse(int bits);

/// The paper's Theorem 2 constants d · D_prod for b = 1..4 (1.57, 0.56, 0.18, 0.047).
std::optional<double> paper_prod_constant(int bits);

/// A published constant beside the formula it should equal.
struct PublishedConstantCheck {
  double published = 0;
  double formula = 0;
  double relative_difference = 0;  ///< published / formula − 1
  bool disagrees = false;          ///< |relative_difference| > kPublishedConstantTolerance
};

/// The paper quotes its constants to two significant digits, and its formula
/// moves by about 1% between d = 64 and d → ∞; a gap beyond 5% is not rounding.
inline constexpr double kPublishedConstantTolerance = 0.05;

/// Theorem 2's published constant for `bits` against (π/2) · D_mse(b − 1) at
/// `dim` (m = d): at b = 4 the formula gives 0.0534, the paper 0.047 (the numpy reproduction, docs/SOURCES.md).
/// nullopt where the paper lists no constant (b > 4).
std::optional<PublishedConstantCheck> check_paper_prod_constant(int dim, int bits);

/// The numpy reproduction's setting: d = 128 and 20,000 samples per cell.
inline constexpr int kReproductionDim = 128;
inline constexpr std::int64_t kReproductionSamples = 20000;

/// A value printed in a table, with the number of decimals it was printed to.
struct PublishedValue {
  double value = 0;
  int decimals = 0;
  double half_unit() const;  ///< 0.5 · 10^−decimals: the rounding it may carry
};

/// The numpy reproduction's d · C(f, b) at d = 128 (0.3609, 0.1160, 0.0340, 0.0093), b = 1..4.
std::optional<PublishedValue> reproduction_d_mse(int bits);

/// The numpy reproduction's b = 2 centroids times √d at d = 128, the positive pair: 0.453, 1.51.
std::array<PublishedValue, 2> reproduction_two_bit_centroids();

/// The numpy reproduction's inner-product table at d = 128: d · E[(⟨y, x̃⟩ − ⟨y, x⟩)²] for
/// b = 1..4, the three estimators and ⟨y, x⟩ = 0, 0.5, 0.9; nullopt elsewhere.
std::optional<PublishedValue> reproduction_inner_product_error(int bits, InnerProductEstimator estimator,
                                                          double inner_product);

}  // namespace tqlab
