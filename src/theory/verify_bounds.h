// `tqlab verify-bounds`: TurboQuant's theorems checked three ways, theory
// (the Lloyd–Max codebook's exact integrals) against Monte Carlo against the
// published constants, for each (dim, bits) row.
//
// Per row (arXiv:2504.19874; the numpy reproduction, turboquant-explained and FlashQuant's notes: docs/SOURCES.md):
//  * D_mse: theory d·E[(t − Q(t))²] under the exact marginal f_d; Monte Carlo
//    by the direct path (uniform unit vectors quantized coordinate-wise,
//    theory/bounds.h) and through the real `tq` quantizer with rot=haar and
//    rot=hadamard (and rot=hadamard2); Theorem 1's upper bound √3·π/2·4^−b and Shannon's 4^−b
//    (Theorem 3, asymptotic: checked for d >= 3); the paper's values.
//  * structured inputs: the d one-hot vectors through the real quantizer per
//    rotation (OneHotDeviation, docs/ROTATIONS.md): Haar checked against
//    theory, one Hadamard round against its exact error d·(c − 1/√d)²,
//    hadamard2 reported;
//  * Theorem 2 (TurboQuant_prod, unit y, m = d projections): d·E[err²] measured
//    and predicted as (d/m)·[(π/2)·D_mse(b−1) − E⟨y, r⟩²]; the paper's constants
//    beside (π/2)·D_mse(b−1), with a flag where they disagree (b = 4: 0.047
//    published, 0.0534 true); the D_prod bounds 4^−b and √3·π²·4^−b (times d).
//  * the biased, debiased and prod estimators at each ⟨y, x⟩: bias and
//    d·E[err²], against the numpy reproduction's table at d = 128; histograms of the error.
//  * checks: every Monte Carlo comparison passes when |z| <= tolerance_z, every
//    exact comparison when it holds. The default run makes 252 Monte Carlo
//    comparisons (306 checks): a 95% interval would fail by chance on almost
//    every run; at |z| <= 4 about 1.6% of seeds fail one (252 · 6.3e-5; seed 0
//    passes with largest |z| 3.1; before the one-hot and hadamard2 checks,
//    seeds 0-8 all passed, largest |z| 3.5).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "theory/bounds.h"

namespace tqlab {

/// Tokens encoded per quantizer context in the real-rotation run: a fresh
/// rotation per batch. A Haar matrix at d = 256 costs ~5 ms to build (twice per
/// batch: encode and decode), so one per vector would dominate the run; the
/// batch's vectors are i.i.d. uniform given the rotation, so nothing is lost.
inline constexpr int kTokensPerRotation = 50;

struct VerifyBoundsOptions {
  std::vector<int> dims = {64, 128, 256};    ///< each 2..4096
  std::vector<int> bits = {1, 2, 3, 4};      ///< each 1..8
  std::int64_t samples = 20000;              ///< D_mse, direct path, per row (>= 10)
  std::int64_t inner_product_samples = 20000;  ///< per row and ⟨y, x⟩ (>= 10)
  std::int64_t rotation_samples = 2000;      ///< per row and real rotation (0 skips, else >= 10)
  std::vector<double> inner_products = {0.0, 0.5, 0.9};  ///< ⟨y, x⟩ values, each in [−1, 1]
  std::uint64_t seed = 0;
  double tolerance_z = 4;                    ///< a Monte Carlo check passes when |z| <= this (> 0)
  int histogram_bins = 80;                   ///< per histogram (>= 1)
};

/// Throws InputError naming the option (as the CLI spells it) and the allowed range.
void validate_verify_bounds_options(const VerifyBoundsOptions& options);

/// One comparison. Monte Carlo checks carry a z-score and pass when
/// |z| <= tolerance; exact checks (bounds, published constants) have z = NaN.
struct BoundsCheck {
  std::string name;      ///< "d_mse_empirical", "bias.prod@0.5", "theorem1.lower", ...
  double value = 0;      ///< measured or computed
  double expected = 0;   ///< theory, bound or published value
  double z = 0;          ///< NaN for exact checks
  bool ok = true;
  std::string detail;    ///< one line saying what was compared
};

/// D_mse measured through the real quantizer with one rotation kind.
struct RotationDistortion {
  std::string rotation;  ///< "haar" or "hadamard"
  std::string spec;      ///< the quantizer spec used, e.g. "tq:b=2,rot=haar,norm=fp32"
  Estimate d_mse;
  double z = 0;          ///< against the row's d_mse_theory
};

/// One-hot inputs e_0 .. e_{d-1} through the real quantizer under one rotation
/// kind (docs/ROTATIONS.md): how far a structured input is from the Haar
/// statistics the theory assumes. Haar is rotation invariant, so its numbers
/// must match theory; randomized Hadamard maps e_i to ±1/√d in every
/// coordinate, a deterministic error that d_mse_predicted gives exactly;
/// hadamard2 is reported, not checked (close to Haar, not equal to it).
struct OneHotDeviation {
  std::string rotation;            ///< "haar", "hadamard", "hadamard2"
  std::string spec;                ///< e.g. "tq:b=2,rot=hadamard,norm=fp32"; the debiased run adds ",debias"
  int seeds = 0;                   ///< rotations drawn; standard errors treat each as one cluster
  Estimate d_mse;                  ///< mean ‖e_i − x̃‖² (theory: the row's d_mse_theory)
  double d_mse_z = 0;              ///< against d_mse_theory
  Estimate debiased_inner_product; ///< mean ⟨x̃, e_i⟩ with debias (1 when unbiased)
  double debiased_inner_product_z = 0;  ///< against 1
  std::optional<double> d_mse_predicted;  ///< hadamard: d·(c − 1/√d)², c the level 1/√d quantizes to
};

/// One estimator at one ⟨y, x⟩.
struct EstimatorResult {
  Estimate error;                 ///< estimate − ⟨y, x⟩: its mean is the bias
  Estimate scaled_squared_error;  ///< d · err²
  double expected_bias = 0;       ///< biased: (α − 1)·⟨y, x⟩; debiased and prod: 0
  double bias_z = 0;
  /// The numpy reproduction's d · E[err²] (d = 128, its ⟨y, x⟩ only).
  std::optional<PublishedValue> reproduction;
  /// (measured − published) in standard errors of the difference of two Monte
  /// Carlo means (ours and the numpy reproduction's 20,000 samples), after the published
  /// rounding (half a unit in its last digit) is granted. NaN without reproduction.
  double reproduction_z = 0;
};

struct InnerProductResult {
  double inner_product = 0;
  std::array<EstimatorResult, 3> estimators;  ///< indexed by InnerProductEstimator
  Estimate residual_norm2;          ///< ‖r‖² of prod's (b−1)-bit stage: D_mse(b − 1) on average
  Estimate scaled_y_dot_residual2;  ///< d · ⟨y, r⟩²
  /// (d/m)·[(π/2)·D_mse(b − 1) − E⟨y, r⟩²], E⟨y, r⟩² measured: prod's d · E[err²].
  double prod_predicted = 0;
  double prod_z = 0;                ///< prod's measured d · E[err²] against prod_predicted
};

/// Histograms of one estimator's error at one row; all share one range,
/// ±kHistogramHalfWidth root-mean-square errors of the estimator's worst group.
struct EstimatorHistograms {
  InnerProductEstimator estimator = InnerProductEstimator::biased;
  std::vector<Histogram> by_inner_product;  ///< parallel to the options' inner_products
  Histogram overall{-1, 1, 1};              ///< all groups pooled
};

inline constexpr double kHistogramHalfWidth = 4;

struct BoundsRow {
  int dim = 0;
  int bits = 0;
  std::vector<double> centroids;  ///< the beta Lloyd–Max levels (2^b), coordinate units

  // D_mse and Theorem 1
  double d_mse_theory = 0;        ///< d · E[(t − Q(t))²] under f_d (the codebook's exact integrals)
  Estimate d_mse_empirical;       ///< direct path
  double d_mse_z = 0;
  std::vector<RotationDistortion> rotations;  ///< haar, then hadamard and hadamard2 when dim is a power of two
  std::vector<OneHotDeviation> one_hot;       ///< the same rotations on one-hot inputs (rotation_samples > 0)
  double upper_bound = 0;         ///< √3·π/2 · 4^−b
  double lower_bound = 0;         ///< 4^−b
  bool lower_bound_applies = true;  ///< d >= 3 (at d = 2 the true D is below it)
  double ratio_to_lower_bound = 0;
  std::optional<double> paper_d_mse;

  // Theorem 2
  int projections = 0;            ///< m = d
  double d_mse_bits_minus_1 = 0;  ///< D_mse(b − 1); 1 at b = 1
  double prod_formula = 0;        ///< (d/m)·(π/2)·D_mse(b − 1)
  std::optional<PublishedConstantCheck> paper_prod;
  double prod_upper_bound = 0;    ///< d · D_prod bound √3·π²·4^−b
  double prod_lower_bound = 0;    ///< 4^−b

  std::vector<InnerProductResult> inner_products;
  std::vector<EstimatorHistograms> histograms;  ///< biased, debiased, prod

  std::vector<BoundsCheck> checks;
  bool ok = true;
};

struct BoundsReport {
  VerifyBoundsOptions options;
  std::vector<BoundsRow> rows;  ///< dims outer, bits inner, in the options' order
  bool all_ok = true;
  double seconds = 0;           ///< wall time of the run

  std::int64_t check_count() const;
  /// "dim 128, b 2: d_mse_empirical: ..." for every failed check.
  std::vector<std::string> failures() const;
};

/// Computes and checks one row. Deterministic for (options.seed, dim, bits).
BoundsRow verify_bounds_row(int dim, int bits, const VerifyBoundsOptions& options);

/// Validates the options and computes every row (dims outer, bits inner).
BoundsReport verify_bounds(const VerifyBoundsOptions& options);

}  // namespace tqlab
