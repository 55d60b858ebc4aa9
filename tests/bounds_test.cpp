// The Monte Carlo machinery behind `tqlab verify-bounds` (src/theory/bounds.h):
// statistics, histograms, samplers, the fast QJL draw against the sketch's
// explicit matrix, the estimators' (un)biasedness, and TurboQuant's constants
// with the erratum (the numpy reproduction; arXiv:2504.19874).
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "io_test_util.h"
#include "quant/codebook.h"
#include "quant/qjl.h"
#include "theory/bounds.h"

namespace tqlab {
namespace {

using io_test::throws_input_error;

/// A Monte Carlo comparison passes at this many standard errors, as verify-bounds does.
constexpr double kZ = 4;

// ---------------------------------------------------------------------------
// Statistics

TEST(RunningStatsTest, MeanVarianceAndStandardErrorByHand) {
  RunningStats stats;
  for (double v : {1.0, 2.0, 3.0, 4.0}) stats.add(v);
  const Estimate estimate = stats.estimate();
  EXPECT_EQ(estimate.samples, 4);
  EXPECT_DOUBLE_EQ(estimate.mean, 2.5);
  EXPECT_DOUBLE_EQ(stats.variance(), 5.0 / 3);  // squared deviations 2.25 + 0.25 + 0.25 + 2.25 over n - 1
  EXPECT_DOUBLE_EQ(estimate.standard_error, std::sqrt(5.0 / 3 / 4));
}

TEST(RunningStatsTest, KeepsDigitsUnderALargeOffset) {
  // The textbook sum-of-squares formula loses every digit of this variance.
  RunningStats stats;
  for (double v : {1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16}) stats.add(v);
  EXPECT_DOUBLE_EQ(stats.mean(), 1e9 + 10);
  EXPECT_NEAR(stats.variance(), 30.0, 1e-6);
}

TEST(RunningStatsTest, FewerThanTwoValuesHaveNoSpread) {
  RunningStats stats;
  EXPECT_EQ(stats.estimate().standard_error, 0);
  stats.add(3);
  EXPECT_EQ(stats.variance(), 0);
  EXPECT_EQ(stats.estimate().standard_error, 0);
  EXPECT_EQ(stats.mean(), 3);
}

TEST(ZScoreTest, CountsStandardErrorsWithSign) {
  const Estimate estimate{100, 1.5, 0.25};
  EXPECT_DOUBLE_EQ(z_score(estimate, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(z_score(estimate, 2.5), -4.0);
  EXPECT_EQ(z_score(estimate, 1.5), 0.0);
  const Estimate exact{100, 1.0, 0.0};
  EXPECT_EQ(z_score(exact, 1.0), 0.0);
  EXPECT_EQ(z_score(exact, 0.5), std::numeric_limits<double>::infinity());
  EXPECT_EQ(z_score(exact, 1.5), -std::numeric_limits<double>::infinity());
}

TEST(HistogramTest, EveryValueCountedOnceAtTheRightBin) {
  Histogram histogram(-1.0, 1.0, 4);  // bins [-1,-0.5) [-0.5,0) [0,0.5) [0.5,1)
  for (double v : {-1.0, -0.75, -0.5, -0.25, 0.0, 0.49, 0.5, 0.999, std::nextafter(1.0, 0.0)}) histogram.add(v);
  for (double v : {-1.5, std::nextafter(-1.0, -2.0)}) histogram.add(v);
  for (double v : {1.0, 7.0}) histogram.add(v);
  EXPECT_EQ(histogram.counts(), (std::vector<std::int64_t>{2, 2, 2, 3}));
  EXPECT_EQ(histogram.below(), 2);
  EXPECT_EQ(histogram.above(), 2);
  EXPECT_EQ(histogram.total(), 13);
  EXPECT_EQ(histogram.bins(), 4);
  EXPECT_EQ(histogram.lo(), -1.0);
  EXPECT_EQ(histogram.hi(), 1.0);
}

// ---------------------------------------------------------------------------
// Samplers

TEST(SamplerTest, UnitVectorsHaveTheSphereMoments) {
  // A coordinate t of a uniform unit vector in R^d: E t² = 1/d, E t⁴ = 3/(d(d+2)).
  const int dim = 10, samples = 40000;
  Rng rng(1);
  std::vector<double> u(dim);
  RunningStats second, fourth, norm_error;
  for (int s = 0; s < samples; ++s) {
    sample_unit_vector(rng, dim, u.data());
    double norm2 = 0;
    for (double v : u) norm2 += v * v;
    norm_error.add(std::fabs(norm2 - 1));
    second.add(u[3] * u[3]);
    fourth.add(u[3] * u[3] * u[3] * u[3]);
  }
  EXPECT_LT(norm_error.mean(), 1e-15);
  EXPECT_LT(std::fabs(z_score(second.estimate(), 1.0 / dim)), kZ);
  EXPECT_LT(std::fabs(z_score(fourth.estimate(), 3.0 / (dim * (dim + 2.0)))), kZ);
}

TEST(SamplerTest, PairsHaveTheInnerProductAndBothAreUniform) {
  const int dim = 12, samples = 40000;
  const double rho = 0.6;
  Rng rng(2);
  std::vector<double> x(dim), y(dim);
  RunningStats y_second, y_fourth, x_dot_first_axis;
  for (int s = 0; s < samples; ++s) {
    sample_unit_pair(rng, dim, rho, x.data(), y.data());
    double xy = 0, yy = 0;
    for (int i = 0; i < dim; ++i) {
      xy += x[i] * y[i];
      yy += y[i] * y[i];
    }
    ASSERT_NEAR(xy, rho, 1e-14);
    ASSERT_NEAR(yy, 1.0, 1e-14);
    // y is itself uniform on the sphere (the pair's law is rotation invariant).
    y_second.add(y[5] * y[5]);
    y_fourth.add(y[5] * y[5] * y[5] * y[5]);
    x_dot_first_axis.add(x[0]);
  }
  EXPECT_LT(std::fabs(z_score(y_second.estimate(), 1.0 / dim)), kZ);
  EXPECT_LT(std::fabs(z_score(y_fourth.estimate(), 3.0 / (dim * (dim + 2.0)))), kZ);
  EXPECT_LT(std::fabs(z_score(x_dot_first_axis.estimate(), 0.0)), kZ);
}

TEST(SamplerTest, CoordinateQuantizationUsesTheNearestLevel) {
  const Codebook& codebook = lloyd_max_codebook(4, 2, CodebookDistribution::beta);
  const std::vector<double> u = {-0.9, -0.01, 0.2, 0.7};
  std::vector<double> q(4);
  quantize_coordinates(codebook, u.data(), q.data());
  double error = 0;
  for (int i = 0; i < 4; ++i) {
    double best = INFINITY;
    for (double c : codebook.centroids) best = std::min(best, std::fabs(u[i] - c));
    EXPECT_DOUBLE_EQ(std::fabs(u[i] - q[i]), best) << i;
    error += (u[i] - q[i]) * (u[i] - q[i]);
  }
  EXPECT_DOUBLE_EQ(coordinate_quantization_error(codebook, u.data()), error);
}

// ---------------------------------------------------------------------------
// QJL: the O(m) draw against the sketch with its explicit m x d matrix

TEST(QjlSampleTest, FastDrawHasTheReferenceSketchesMeanAndVariance) {
  const int dim = 16, projections = 24, samples = 20000;
  // A fixed residual r and unit y with <y, r> != 0 and y not parallel to r.
  std::vector<float> r(dim), y(dim);
  double r_norm2 = 0, y_norm2 = 0;
  for (int i = 0; i < dim; ++i) {
    r[i] = static_cast<float>(0.05 * std::sin(1.0 + i));
    y[i] = static_cast<float>(std::sin(1.0 + i) + 0.7 * std::cos(0.3 * i));  // cosine 0.83 with r
    r_norm2 += static_cast<double>(r[i]) * r[i];
    y_norm2 += static_cast<double>(y[i]) * y[i];
  }
  double y_dot_r = 0;
  for (int i = 0; i < dim; ++i) {
    y[i] = static_cast<float>(y[i] / std::sqrt(y_norm2));
    y_dot_r += static_cast<double>(y[i]) * r[i];
  }
  const double r_norm = std::sqrt(r_norm2);
  const double variance = qjl_conditional_variance(projections, r_norm, y_dot_r);
  ASSERT_GT(std::fabs(y_dot_r), 0.8 * r_norm);

  RunningStats fast, fast_squared, reference, reference_squared;
  Rng rng(3);
  for (int s = 0; s < samples; ++s) {
    const double a = qjl_estimate_sample(rng, projections, r_norm, y_dot_r);
    fast.add(a);
    fast_squared.add((a - y_dot_r) * (a - y_dot_r));
    const QjlSketch sketch(dim, projections, derive_seed({4, static_cast<std::uint64_t>(s)}));
    const double b = qjl_estimate_reference(sketch, y.data(), r.data());
    reference.add(b);
    reference_squared.add((b - y_dot_r) * (b - y_dot_r));
  }
  // Both unbiased for <y, r> with variance (1/m)[(pi/2)|r|^2 - <y,r>^2]: the draw
  // is the sketch's distribution, not merely its first two moments by luck.
  EXPECT_LT(std::fabs(z_score(fast.estimate(), y_dot_r)), kZ);
  EXPECT_LT(std::fabs(z_score(reference.estimate(), y_dot_r)), kZ);
  EXPECT_LT(std::fabs(z_score(fast_squared.estimate(), variance)), kZ);
  EXPECT_LT(std::fabs(z_score(reference_squared.estimate(), variance)), kZ);
  // The sign of the sketch carries information: a draw that ignored <y, r>
  // would have mean 0, many standard errors away.
  EXPECT_GT(std::fabs(fast.mean()), 20 * fast.estimate().standard_error);
}

TEST(QjlSampleTest, ZeroResidualGivesZero) {
  Rng rng(5);
  EXPECT_EQ(qjl_estimate_sample(rng, 8, 0.0, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(qjl_conditional_variance(4, 2.0, 1.0), (std::numbers::pi / 2 * 4 - 1) / 4);
}

// ---------------------------------------------------------------------------
// Estimators

TEST(InnerProductSamplerTest, DebiasedAndProdAreUnbiasedWhileBiasedShrinksByAlpha) {
  const int dim = 32, samples = 6000;
  for (int bits : {1, 2, 3}) {
    InnerProductSampler sampler(dim, bits, dim);
    EXPECT_DOUBLE_EQ(sampler.alpha(), lloyd_max_codebook(dim, bits, CodebookDistribution::beta).alpha);
    for (double rho : {0.5, 0.9}) {
      Rng rng(derive_seed({6, static_cast<std::uint64_t>(bits), static_cast<std::uint64_t>(rho * 10)}));
      std::array<RunningStats, 3> errors;
      RunningStats variance_gap;  // d err² − d Var(err | x, y): mean 0 for prod
      for (int s = 0; s < samples; ++s) {
        const InnerProductSample sample = sampler.sample(rng, rho);
        for (int e = 0; e < 3; ++e) errors[e].add(sample.error[e]);
        const double prod_error = sample.error[static_cast<int>(InnerProductEstimator::prod)];
        variance_gap.add(dim * (prod_error * prod_error - sample.prod_conditional_variance));
      }
      const std::string where = "b=" + std::to_string(bits) + " rho=" + std::to_string(rho);
      const Estimate biased = errors[0].estimate(), debiased = errors[1].estimate(), prod = errors[2].estimate();
      EXPECT_LT(std::fabs(z_score(debiased, 0)), kZ) << where;
      EXPECT_LT(std::fabs(z_score(prod, 0)), kZ) << where;
      EXPECT_LT(std::fabs(z_score(biased, (sampler.alpha() - 1) * rho)), kZ) << where;
      EXPECT_GT(std::fabs(z_score(biased, 0)), 6) << "the bias must be visible: " << where;
      EXPECT_LT(std::fabs(z_score(variance_gap.estimate(), 0)), kZ) << where;
    }
  }
}

TEST(InnerProductSamplerTest, OneBitProdIsThePureSketchOfX) {
  // b = 1: no MSE stage, r = x, so |r|² = 1 and <y, r> = <y, x>; the numpy reproduction's
  // 1-bit column: d·E[err²] = π/2 − <y,x>² at m = d.
  const int dim = 64;
  InnerProductSampler sampler(dim, 1, dim);
  Rng rng(7);
  RunningStats scaled;
  for (int s = 0; s < 8000; ++s) {
    const InnerProductSample sample = sampler.sample(rng, 0.5);
    ASSERT_NEAR(sample.residual_norm2, 1.0, 1e-12);
    ASSERT_NEAR(sample.y_dot_residual, 0.5, 1e-12);
    const double error = sample.error[static_cast<int>(InnerProductEstimator::prod)];
    scaled.add(dim * error * error);
  }
  EXPECT_LT(std::fabs(z_score(scaled.estimate(), std::numbers::pi / 2 - 0.25)), kZ);
}

TEST(InnerProductSamplerTest, RejectsNoProjections) {
  EXPECT_TRUE(throws_input_error([] { InnerProductSampler(16, 2, 0); }, {"projections", "0"}));
}

// ---------------------------------------------------------------------------
// Constants, bounds and the erratum

TEST(TheoremConstantsTest, BoundsAsPublished) {
  for (int bits = 1; bits <= 8; ++bits) {
    const double lower = std::pow(4.0, -bits);
    EXPECT_DOUBLE_EQ(shannon_lower_bound(bits), lower);
    EXPECT_DOUBLE_EQ(theorem1_upper_bound(bits), std::sqrt(3.0) * std::numbers::pi / 2 * lower);
    EXPECT_DOUBLE_EQ(theorem2_scaled_upper_bound(bits), std::sqrt(3.0) * std::numbers::pi * std::numbers::pi * lower);
    EXPECT_DOUBLE_EQ(theorem2_scaled_lower_bound(bits), lower);
  }
  EXPECT_NEAR(theorem1_upper_bound(0), 2.7207, 1e-4);  // the abstract's "within 2.7x"
  EXPECT_EQ(lloyd_max_d_mse(128, 0), 1.0);
  EXPECT_EQ(paper_d_mse(3), 0.03);
  EXPECT_EQ(paper_prod_constant(2), 0.56);
  EXPECT_FALSE(paper_d_mse(5).has_value());
  EXPECT_FALSE(paper_prod_constant(0).has_value());
}

TEST(TheoremConstantsTest, Theorem2ErratumIsFlaggedAtFourBitsOnly) {
  // The numpy reproduction: (π/2)·D_mse(3) = (π/2)·0.0340 = 0.0534 at d = 128, but the paper lists 0.047.
  const auto four = check_paper_prod_constant(128, 4);
  ASSERT_TRUE(four.has_value());
  EXPECT_NEAR(four->formula, 0.0534, 5e-5);
  EXPECT_EQ(four->published, 0.047);
  EXPECT_NEAR(four->relative_difference, 0.047 / 0.0534 - 1, 1e-3);
  EXPECT_TRUE(four->disagrees);
  // The others are the formula to two digits: 1.57, 0.56 (0.567), 0.18 (0.182).
  const double expected_formula[] = {std::numbers::pi / 2, 0.5669, 0.1822};
  for (int bits = 1; bits <= 3; ++bits) {
    const auto check = check_paper_prod_constant(128, bits);
    ASSERT_TRUE(check.has_value());
    EXPECT_NEAR(check->formula, expected_formula[bits - 1], 1e-4) << bits;
    EXPECT_FALSE(check->disagrees) << bits;
  }
  EXPECT_FALSE(check_paper_prod_constant(128, 5).has_value());
  // At m = d/2 the prediction doubles.
  EXPECT_DOUBLE_EQ(prod_formula(128, 4, 64), 2 * prod_formula(128, 4, 128));
}

TEST(TheoremConstantsTest, ReproductionTablesAreIndexedAsPrinted) {
  EXPECT_EQ(reproduction_d_mse(2)->value, 0.1160);
  EXPECT_EQ(reproduction_d_mse(2)->decimals, 4);
  EXPECT_FALSE(reproduction_d_mse(0).has_value());
  EXPECT_EQ(reproduction_inner_product_error(1, InnerProductEstimator::biased, 0.9)->value, 13.6);
  EXPECT_EQ(reproduction_inner_product_error(1, InnerProductEstimator::biased, 0.9)->half_unit(), 0.05);
  EXPECT_EQ(reproduction_inner_product_error(3, InnerProductEstimator::debiased, 0.5)->value, 0.046);
  EXPECT_EQ(reproduction_inner_product_error(4, InnerProductEstimator::prod, 0.0)->value, 0.053);
  EXPECT_FALSE(reproduction_inner_product_error(4, InnerProductEstimator::prod, 0.3).has_value());
  EXPECT_FALSE(reproduction_inner_product_error(5, InnerProductEstimator::prod, 0.0).has_value());
}

}  // namespace
}  // namespace tqlab
