// Lloyd–Max codebooks (src/quant/codebook.h): literature goldens (the numpy reproduction,
// Max 1960), TurboQuant's Theorem 1 bounds, and the optimality conditions
// checked against a reference written independently here: composite Simpson
// quadrature of the densities (the library uses incomplete beta functions,
// erf and Gauss–Legendre), plain Lloyd iteration (the library uses Newton),
// and a brute-force scan for the uniform step.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "quant/codebook.h"

namespace tqlab {
namespace {

using Dist = CodebookDistribution;

const std::vector<int> kPropertyDims = {2, 3, 4, 5, 8, 16, 64, 128, 256, 1024};
constexpr int kMaxBits = 8;
const double kPanterDite = std::sqrt(3.0) * std::numbers::pi / 2;  // Theorem 1's upper constant

// ---------------------------------------------------------------------------
// Reference quadrature

/// ∫ f, ∫ t f, ∫ t² f over one cell.
struct Moments {
  double mass = 0, first = 0, second = 0;
};

/// Moments of density(x) · (t(x))^k, k = 0, 1, 2, over x in [lo, hi] by
/// composite Simpson with `panels` panels; density includes the Jacobian.
template <class Density, class Coordinate>
Moments simpson_moments(double lo, double hi, int panels, Density&& density, Coordinate&& coordinate) {
  panels += panels % 2;
  const double h = (hi - lo) / panels;
  Moments sum;
  for (int i = 0; i <= panels; ++i) {
    const double x = lo + i * h;
    const double weight = (i == 0 || i == panels) ? 1 : (i % 2 ? 4 : 2);
    const double f = weight * density(x);
    const double t = coordinate(x);
    sum.mass += f;
    sum.first += f * t;
    sum.second += f * t * t;
  }
  return {sum.mass * h / 3, sum.first * h / 3, sum.second * h / 3};
}

/// The exact marginal f_d of one coordinate of a uniform unit vector in R^d,
/// integrated over the angle θ = asin t: f_d(t) dt ∝ cos^(d−2)(θ) dθ, smooth
/// even at d = 2. Its constant comes from the same quadrature, not from Γ.
class SphereMarginalReference {
 public:
  explicit SphereMarginalReference(int dim) : dim_(dim) { scale_ = 0.5 / raw(0.0, 1.0).mass; }

  /// Moments over [lo, hi] ∩ [0, 1].
  Moments moments(double lo, double hi) const {
    Moments m = raw(lo, hi);
    return {m.mass * scale_, m.first * scale_, m.second * scale_};
  }
  double end() const { return 1.0; }

 private:
  Moments raw(double lo, double hi) const {
    lo = std::clamp(lo, 0.0, 1.0);
    hi = std::clamp(hi, 0.0, 1.0);
    if (lo >= hi) return {};
    const double theta_lo = std::asin(lo), theta_hi = std::asin(hi);
    // Enough panels to resolve the ~1/√d spread of the density.
    const int panels = 200 + static_cast<int>(300 * (theta_hi - theta_lo) * std::sqrt(dim_));
    return simpson_moments(
        theta_lo, theta_hi, panels,
        [&](double theta) { return std::pow(std::cos(theta), dim_ - 2); },
        [](double theta) { return std::sin(theta); });
  }

  int dim_;
  double scale_ = 1;
};

/// N(0, 1/d), integrated directly; the tail beyond 40σ is dropped.
class GaussianReference {
 public:
  explicit GaussianReference(int dim) : sigma_(1 / std::sqrt(static_cast<double>(dim))) {}

  Moments moments(double lo, double hi) const {
    hi = std::min(hi, std::max(lo, 0.0) + 40 * sigma_);
    if (lo >= hi) return {};
    const int panels = 200 + static_cast<int>(300 * (hi - lo) / sigma_);
    return simpson_moments(
        lo, hi, panels,
        [&](double t) {
          return std::exp(-0.5 * t * t / (sigma_ * sigma_)) / (sigma_ * std::sqrt(2 * std::numbers::pi));
        },
        [](double t) { return t; });
  }
  double end() const { return std::numeric_limits<double>::infinity(); }

 private:
  double sigma_;
};

/// Positive-half cells of a codebook: cell j (0..K−1) is
/// [boundary below centroid K + j, boundary above it], the last ending at `end`.
double cell_lo(const Codebook& codebook, int j) {
  return codebook.boundaries[codebook.centroids.size() / 2 - 1 + j];
}
double cell_hi(const Codebook& codebook, int j, double end) {
  const int half = static_cast<int>(codebook.centroids.size() / 2);
  return j + 1 < half ? codebook.boundaries[half + j] : end;
}

/// MSE per coordinate and E[t Q(t)] of a symmetric quantizer under `reference`.
template <class Reference>
std::pair<double, double> reference_mse_and_correlation(const Codebook& codebook, const Reference& reference) {
  const int half = static_cast<int>(codebook.centroids.size() / 2);
  double mse = 0, correlation = 0;
  for (int j = 0; j < half; ++j) {
    const double c = codebook.centroids[half + j];
    const Moments m = reference.moments(cell_lo(codebook, j), cell_hi(codebook, j, reference.end()));
    mse += m.second - 2 * c * m.first + c * c * m.mass;
    correlation += c * m.first;
  }
  return {2 * mse, 2 * correlation};
}

/// Each positive centroid against the conditional mean of its cell.
template <class Reference>
void expect_centroid_condition(const Codebook& codebook, const Reference& reference, double relative_tolerance) {
  const int half = static_cast<int>(codebook.centroids.size() / 2);
  const double scale = codebook.centroids.back();
  for (int j = 0; j < half; ++j) {
    const Moments m = reference.moments(cell_lo(codebook, j), cell_hi(codebook, j, reference.end()));
    EXPECT_NEAR(codebook.centroids[half + j], m.first / m.mass, relative_tolerance * scale)
        << codebook_distribution_name(codebook.distribution) << " d=" << codebook.dim << " b=" << codebook.bits
        << " cell " << j;
  }
}

// ---------------------------------------------------------------------------
// Names, arguments, lookup

TEST(CodebookTest, DistributionNamesRoundTrip) {
  for (Dist distribution : {Dist::beta, Dist::gauss, Dist::uniform})
    EXPECT_EQ(parse_codebook_distribution(codebook_distribution_name(distribution)), distribution);
  EXPECT_EQ(codebook_distribution_name(Dist::beta), "beta");
  EXPECT_EQ(codebook_distribution_name(Dist::gauss), "gauss");
  EXPECT_EQ(codebook_distribution_name(Dist::uniform), "uniform");
  EXPECT_FALSE(parse_codebook_distribution("gaussian").has_value());
  EXPECT_FALSE(parse_codebook_distribution("").has_value());
}

TEST(CodebookTest, RejectsOutOfRangeArgumentsNamingTheRange) {
  auto message_of = [](int dim, int bits) -> std::string {
    try {
      lloyd_max_codebook(dim, bits, Dist::beta);
    } catch (const InputError& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(message_of(1, 4).find("2..4096"), std::string::npos);
  EXPECT_NE(message_of(4097, 4).find("2..4096"), std::string::npos);
  EXPECT_NE(message_of(128, 0).find("1..8"), std::string::npos);
  EXPECT_NE(message_of(128, 9).find("1..8"), std::string::npos);
  EXPECT_THROW(compute_codebook(0, 2, Dist::gauss), InputError);
  EXPECT_THROW(compute_codebook(128, 2, static_cast<Dist>(7)), InputError);
  EXPECT_NO_THROW(lloyd_max_codebook(2, 1, Dist::beta));
  EXPECT_NO_THROW(lloyd_max_codebook(4096, 8, Dist::beta));
}

// A solve that has not reached the Lloyd fixed point is refused in every
// build (Release compiles asserts out): with an iteration budget of 1 Newton
// cannot converge from the companding start at b = 4, and the error names the
// codebook. The default budget converges everywhere (WellFormedAcrossTheWholeRange).
TEST(CodebookTest, UnconvergedSolveThrowsNamingTheCodebook) {
  for (Dist distribution : {Dist::beta, Dist::gauss}) {
    try {
      compute_codebook(128, 4, distribution, LloydMaxSolverLimits{1});
      ADD_FAILURE() << "one iteration accepted for " << codebook_distribution_name(distribution);
    } catch (const InternalError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("d=128, b=4, " + std::string(codebook_distribution_name(distribution))),
                std::string::npos) << message;
      EXPECT_NE(message.find("did not converge in 1 iterations"), std::string::npos) << message;
    }
    EXPECT_NO_THROW(compute_codebook(128, 4, distribution, LloydMaxSolverLimits{}));
  }
}

TEST(CodebookTest, CodeOfIsTheNearestLevel) {
  std::mt19937_64 generator(7);
  for (int bits : {1, 2, 4, 8}) {
    const Codebook& codebook = lloyd_max_codebook(64, bits, Dist::beta);
    std::uniform_real_distribution<double> uniform(-0.6, 0.6);
    for (int trial = 0; trial < 2000; ++trial) {
      const double t = uniform(generator);
      int nearest = 0;
      for (int i = 1; i < static_cast<int>(codebook.centroids.size()); ++i)
        if (std::fabs(t - codebook.centroids[i]) < std::fabs(t - codebook.centroids[nearest])) nearest = i;
      ASSERT_EQ(codebook.code_of(t), nearest) << "b=" << bits << " t=" << t;
    }
    // On a boundary the lower level wins (as in the kernels); beyond the ends the outer levels.
    for (int i = 0; i < static_cast<int>(codebook.boundaries.size()); ++i)
      EXPECT_EQ(codebook.code_of(codebook.boundaries[i]), i);
    EXPECT_EQ(codebook.code_of(-1.0), 0);
    EXPECT_EQ(codebook.code_of(1.0), (1 << bits) - 1);
  }
}

TEST(CodebookTest, FloatCopiesMatch) {
  const Codebook& codebook = lloyd_max_codebook(128, 4, Dist::beta);
  ASSERT_EQ(codebook.centroids_f.size(), codebook.centroids.size());
  ASSERT_EQ(codebook.boundaries_f.size(), codebook.boundaries.size());
  for (std::size_t i = 0; i < codebook.centroids.size(); ++i)
    EXPECT_EQ(codebook.centroids_f[i], static_cast<float>(codebook.centroids[i]));
  for (std::size_t i = 0; i < codebook.boundaries.size(); ++i)
    EXPECT_EQ(codebook.boundaries_f[i], static_cast<float>(codebook.boundaries[i]));
}

TEST(CodebookTest, CacheReturnsOneCodebookToEveryThread) {
  constexpr int kThreads = 4;
  std::vector<const Codebook*> seen(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] { seen[i] = &lloyd_max_codebook(96, 6, Dist::gauss); });
  for (auto& thread : threads) thread.join();
  for (int i = 1; i < kThreads; ++i) EXPECT_EQ(seen[i], seen[0]);
  EXPECT_EQ(&lloyd_max_codebook(96, 6, Dist::gauss), seen[0]);
  EXPECT_NE(&lloyd_max_codebook(96, 6, Dist::beta), seen[0]);
  const Codebook fresh = compute_codebook(96, 6, Dist::gauss);
  EXPECT_EQ(fresh.centroids, seen[0]->centroids);
  EXPECT_EQ(seen[0]->dim, 96);
  EXPECT_EQ(seen[0]->bits, 6);
  EXPECT_EQ(seen[0]->distribution, Dist::gauss);
}

// ---------------------------------------------------------------------------
// Literature goldens

TEST(CodebookTest, Beta128MatchesThePublishedReproduction) {
  constexpr int d = 128;
  const double golden_d_mse[] = {0.3609, 0.1160, 0.0340, 0.0093};
  for (int bits = 1; bits <= 4; ++bits)
    EXPECT_NEAR(lloyd_max_codebook(d, bits, Dist::beta).d_mse(), golden_d_mse[bits - 1], 5e-5) << "b=" << bits;
  // The paper's b = 2 centroids ±0.453/√d, ±1.51/√d, to one unit in the third
  // digit (the exact beta values at d = 128 are 0.45245 and 1.50519).
  const Codebook& two_bits = lloyd_max_codebook(d, 2, Dist::beta);
  const double root_d = std::sqrt(static_cast<double>(d));
  EXPECT_NEAR(two_bits.centroids[2] * root_d, 0.453, 1e-3);
  EXPECT_NEAR(two_bits.centroids[3] * root_d, 1.51, 1e-2);
  // High-precision values from a 30-digit plain Lloyd run (mpmath betainc).
  EXPECT_NEAR(two_bits.centroids[2] * root_d, 0.452453250475, 1e-10);
  EXPECT_NEAR(two_bits.centroids[3] * root_d, 1.50519297837, 1e-10);
}

TEST(CodebookTest, Beta8Goldens) {
  const double golden_d_mse[] = {0.3224, 0.0948, 0.0261, 0.0069};
  for (int bits = 1; bits <= 4; ++bits)
    EXPECT_NEAR(lloyd_max_codebook(8, bits, Dist::beta).d_mse(), golden_d_mse[bits - 1], 5e-5) << "b=" << bits;
}

TEST(CodebookTest, Beta3IsTheUniformQuantizer) {
  // At d = 3 the marginal is uniform on [−1, 1] (Archimedes), whose Lloyd–Max
  // quantizer has levels (i − (L−1)/2)·2/L and d·MSE = 3 · (2/L)²/12 = 4^−b.
  for (int bits = 1; bits <= kMaxBits; ++bits) {
    const Codebook& codebook = lloyd_max_codebook(3, bits, Dist::beta);
    const int levels = 1 << bits;
    EXPECT_NEAR(codebook.d_mse(), std::pow(4.0, -bits), 1e-10) << "b=" << bits;
    for (int i = 0; i < levels; ++i)
      EXPECT_NEAR(codebook.centroids[i], (i - (levels - 1) / 2.0) * 2.0 / levels, 1e-12) << "b=" << bits;
    const Codebook& uniform = lloyd_max_codebook(3, bits, Dist::uniform);
    for (int i = 0; i < levels; ++i) EXPECT_NEAR(uniform.centroids[i], codebook.centroids[i], 1e-12);
  }
}

TEST(CodebookTest, OneBitHasClosedForm) {
  // b = 1: levels ±E|t|. Beta: E|t| = 2 C_d/(d−1) = Γ(d/2)/(√π Γ((d+1)/2)),
  // MSE = 1/d − E|t|². Gauss: E|t| = √(2/π)/√d, d·MSE = 1 − 2/π (Max 1960).
  for (int d : {2, 3, 8, 128, 1024, 4096}) {
    const double mean_abs = std::exp(std::lgamma(d / 2.0) - std::lgamma((d + 1) / 2.0)) / std::sqrt(std::numbers::pi);
    const Codebook& beta = lloyd_max_codebook(d, 1, Dist::beta);
    EXPECT_NEAR(beta.centroids[1], mean_abs, 1e-12 * mean_abs) << "d=" << d;
    EXPECT_NEAR(beta.centroids[0], -mean_abs, 1e-12 * mean_abs) << "d=" << d;
    EXPECT_NEAR(beta.mse_per_coord, 1.0 / d - mean_abs * mean_abs, 1e-11 / d) << "d=" << d;
    const Codebook& gauss = lloyd_max_codebook(d, 1, Dist::gauss);
    EXPECT_NEAR(gauss.centroids[1] * std::sqrt(d), std::sqrt(2 / std::numbers::pi), 1e-12) << "d=" << d;
    EXPECT_NEAR(gauss.d_mse(), 1 - 2 / std::numbers::pi, 1e-12) << "d=" << d;
  }
}

TEST(CodebookTest, GaussMatchesMax1960) {
  // Max (1960), unit-variance Gaussian, N = 2, 4, 8, 16 levels. (His printed
  // N = 16 error 0.009497 lies 4e-6 below the exact 0.0095010; it still
  // agrees to the four decimals checked here, and his levels to all digits.)
  const double golden_d_mse[] = {0.3634, 0.1175, 0.03454, 0.009497};
  for (int d : {8, 128, 1000}) {
    const double root_d = std::sqrt(static_cast<double>(d));
    for (int bits = 1; bits <= 4; ++bits)
      EXPECT_NEAR(lloyd_max_codebook(d, bits, Dist::gauss).d_mse(), golden_d_mse[bits - 1], 5e-5)
          << "d=" << d << " b=" << bits;
    const Codebook& two_bits = lloyd_max_codebook(d, 2, Dist::gauss);
    EXPECT_NEAR(two_bits.centroids[2] * root_d, 0.4528, 1e-4);
    EXPECT_NEAR(two_bits.centroids[3] * root_d, 1.510, 1e-3);
    const double max_levels_16[] = {0.1284, 0.3881, 0.6568, 0.9424, 1.256, 1.618, 2.069, 2.733};
    const Codebook& four_bits = lloyd_max_codebook(d, 4, Dist::gauss);
    for (int j = 0; j < 8; ++j)
      EXPECT_NEAR(four_bits.centroids[8 + j] * root_d, max_levels_16[j], j < 4 ? 1e-4 : 1e-3) << "level " << j;
  }
}

// ---------------------------------------------------------------------------
// Properties over d and b

TEST(CodebookTest, ShapeOrderAndSymmetry) {
  for (int d : kPropertyDims) {
    for (int bits = 1; bits <= kMaxBits; ++bits) {
      for (Dist distribution : {Dist::beta, Dist::gauss, Dist::uniform}) {
        const Codebook& codebook = lloyd_max_codebook(d, bits, distribution);
        const int levels = 1 << bits;
        ASSERT_EQ(static_cast<int>(codebook.centroids.size()), levels);
        ASSERT_EQ(static_cast<int>(codebook.boundaries.size()), levels - 1);
        for (int i = 0; i < levels; ++i) {
          ASSERT_TRUE(std::isfinite(codebook.centroids[i]));
          EXPECT_EQ(codebook.centroids[i], -codebook.centroids[levels - 1 - i]);
          if (i > 0) { EXPECT_LT(codebook.centroids[i - 1], codebook.centroids[i]); }
        }
        for (int i = 0; i + 1 < levels; ++i) {
          EXPECT_EQ(codebook.boundaries[i], 0.5 * (codebook.centroids[i] + codebook.centroids[i + 1]));
          EXPECT_LT(codebook.centroids[i], codebook.boundaries[i]);
          EXPECT_LT(codebook.boundaries[i], codebook.centroids[i + 1]);
        }
        EXPECT_EQ(codebook.boundaries[levels / 2 - 1], 0.0);
        EXPECT_TRUE(std::isfinite(codebook.mse_per_coord) && std::isfinite(codebook.alpha));
        if (distribution != Dist::gauss) { EXPECT_LE(codebook.centroids.back(), 1.0); }
      }
    }
  }
}

TEST(CodebookTest, CentroidsAreConditionalMeansOfTheirCells) {
  for (int d : kPropertyDims) {
    const SphereMarginalReference sphere(d);
    const GaussianReference gaussian(d);
    for (int bits = 1; bits <= kMaxBits; ++bits) {
      expect_centroid_condition(lloyd_max_codebook(d, bits, Dist::beta), sphere, 1e-9);
      expect_centroid_condition(lloyd_max_codebook(d, bits, Dist::gauss), gaussian, 1e-9);
    }
  }
}

TEST(CodebookTest, MseAndAlphaAgreeWithQuadrature) {
  for (int d : kPropertyDims) {
    const SphereMarginalReference sphere(d);
    const GaussianReference gaussian(d);
    for (int bits = 1; bits <= kMaxBits; ++bits) {
      for (Dist distribution : {Dist::beta, Dist::gauss, Dist::uniform}) {
        const Codebook& codebook = lloyd_max_codebook(d, bits, distribution);
        const auto [marginal_mse, correlation] = reference_mse_and_correlation(codebook, sphere);
        const std::string where = std::string(codebook_distribution_name(distribution)) +
                                  " d=" + std::to_string(d) + " b=" + std::to_string(bits);
        EXPECT_NEAR(codebook.marginal_mse_per_coord, marginal_mse, 1e-8 * marginal_mse) << where;
        EXPECT_NEAR(codebook.alpha, d * correlation, 1e-10) << where;
        const double designed_mse = distribution == Dist::gauss
                                        ? reference_mse_and_correlation(codebook, gaussian).first
                                        : marginal_mse;
        EXPECT_NEAR(codebook.mse_per_coord, designed_mse, 1e-8 * designed_mse) << where;
      }
    }
  }
}

TEST(CodebookTest, AlphaIsOneMinusDistortionForLloydMax) {
  // Centroid condition ⇒ E⟨u − Q(u), Q(u)⟩ = 0 ⇒ E⟨Q(u), u⟩ = 1 − D_mse
  // (the numpy reproduction, docs/SOURCES.md).
  for (int d : kPropertyDims) {
    for (int bits = 1; bits <= kMaxBits; ++bits) {
      const Codebook& codebook = lloyd_max_codebook(d, bits, Dist::beta);
      EXPECT_EQ(codebook.mse_per_coord, codebook.marginal_mse_per_coord);
      EXPECT_NEAR(codebook.alpha, 1 - d * codebook.marginal_mse_per_coord, 1e-10) << "d=" << d << " b=" << bits;
    }
  }
}

TEST(CodebookTest, MseFallsStrictlyWithBits) {
  for (int d : kPropertyDims) {
    for (Dist distribution : {Dist::beta, Dist::gauss, Dist::uniform}) {
      for (int bits = 2; bits <= kMaxBits; ++bits) {
        EXPECT_LT(lloyd_max_codebook(d, bits, distribution).mse_per_coord,
                  lloyd_max_codebook(d, bits - 1, distribution).mse_per_coord)
            << codebook_distribution_name(distribution) << " d=" << d << " b=" << bits;
        EXPECT_LT(lloyd_max_codebook(d, bits, distribution).marginal_mse_per_coord,
                  lloyd_max_codebook(d, bits - 1, distribution).marginal_mse_per_coord);
      }
    }
  }
}

TEST(CodebookTest, Theorem1Bounds) {
  // 4^−b <= d·MSE <= (√3π/2)·4^−b for d >= 4; at d = 3 the lower bound is
  // met exactly (uniform marginal); at d = 2 (arcsine) the scalar quantizer
  // beats it, since the bound is for the sphere, not for one coordinate.
  for (int d : kPropertyDims) {
    for (int bits = 1; bits <= kMaxBits; ++bits) {
      const double lower = std::pow(4.0, -bits);
      const double d_mse = lloyd_max_codebook(d, bits, Dist::beta).d_mse();
      if (d == 2) {
        EXPECT_LT(d_mse, lower) << "b=" << bits;
      } else if (d == 3) {
        EXPECT_NEAR(d_mse, lower, 1e-10) << "b=" << bits;
      } else {
        EXPECT_GE(d_mse, lower) << "d=" << d << " b=" << bits;
        EXPECT_LE(d_mse, kPanterDite * lower) << "d=" << d << " b=" << bits;
      }
    }
  }
}

TEST(CodebookTest, LloydMaxBeatsUniformLevels) {
  for (int d : kPropertyDims) {
    for (int bits = 1; bits <= kMaxBits; ++bits) {
      const double optimal = lloyd_max_codebook(d, bits, Dist::beta).mse_per_coord;
      const double uniform = lloyd_max_codebook(d, bits, Dist::uniform).mse_per_coord;
      // Equal at b = 1 (two levels are always "uniform") and at d = 3 (uniform marginal).
      if (bits == 1 || d == 3) {
        EXPECT_NEAR(uniform, optimal, 1e-10 * optimal) << "d=" << d << " b=" << bits;
      } else {
        EXPECT_GT(uniform, optimal * (1 + 1e-6)) << "d=" << d << " b=" << bits;
      }
    }
  }
}

TEST(CodebookTest, GaussCodebookOnTheExactMarginal) {
  for (int bits = 1; bits <= kMaxBits; ++bits) {
    // At small d the Gaussian approximation costs MSE on the real marginal...
    EXPECT_GT(lloyd_max_codebook(8, bits, Dist::gauss).marginal_mse_per_coord,
              lloyd_max_codebook(8, bits, Dist::beta).mse_per_coord * (1 + 1e-3))
        << "b=" << bits;
    // ...and at d = 128 none to four decimals of d·MSE.
    EXPECT_NEAR(128 * lloyd_max_codebook(128, bits, Dist::gauss).marginal_mse_per_coord,
                lloyd_max_codebook(128, bits, Dist::beta).d_mse(), 5e-5)
        << "b=" << bits;
    EXPECT_GE(lloyd_max_codebook(128, bits, Dist::gauss).marginal_mse_per_coord,
              lloyd_max_codebook(128, bits, Dist::beta).mse_per_coord);
  }
}

TEST(CodebookTest, UniformStepIsTheGlobalMinimizer) {
  // The step minimizes MSE(s) under f_d over a brute-force geometric scan of
  // s (including steps whose outer levels leave the support), and the MSE is
  // stationary there. All by the reference quadrature.
  for (int d : {2, 3, 5, 128}) {
    const SphereMarginalReference sphere(d);
    for (int bits = 1; bits <= 5; ++bits) {
      const int half = 1 << (bits - 1);
      auto mse_at = [&](double step) {
        double mse = 0;
        for (int j = 0; j < half; ++j) {
          const double level = (j + 0.5) * step;
          const Moments m = sphere.moments(j * step, j + 1 < half ? (j + 1) * step : 1.0);
          mse += m.second - 2 * level * m.first + level * level * m.mass;
        }
        return 2 * mse;
      };
      const Codebook& codebook = lloyd_max_codebook(d, bits, Dist::uniform);
      const double step = codebook.centroids[half] * 2;
      for (int i = 0; i < half; ++i) EXPECT_NEAR(codebook.centroids[half + i], (i + 0.5) * step, 1e-15);
      const double at_step = mse_at(step);
      const double largest = 4.0 / (2 * half - 1);
      for (int i = 0; i <= 200; ++i) {
        const double s = largest * std::pow(1e-3, i / 200.0);
        EXPECT_LE(at_step, mse_at(s) * (1 + 1e-9)) << "d=" << d << " b=" << bits << " s=" << s;
      }
      // Central difference; its O(h²) term is ~3e-7 at d = 2 (large third derivative).
      const double h = 1e-6 * step;
      const double derivative = (mse_at(step + h) - mse_at(step - h)) / (2 * h);
      EXPECT_NEAR(derivative * step / at_step, 0.0, 2e-6) << "d=" << d << " b=" << bits;
    }
  }
}

TEST(CodebookTest, AgreesWithPlainLloydIteration) {
  // Plain Lloyd (centroid ← conditional mean, threshold ← midpoint) from
  // equally spaced levels, on the reference quadrature.
  for (int d : {2, 4, 128}) {
    const SphereMarginalReference sphere(d);
    for (int bits = 1; bits <= 3; ++bits) {
      const int half = 1 << (bits - 1);
      std::vector<double> levels(half);
      for (int j = 0; j < half; ++j) levels[j] = (j + 0.5) / (half * std::sqrt(static_cast<double>(d)));
      for (int iteration = 0; iteration < 5000; ++iteration) {
        double change = 0;
        std::vector<double> next(half);
        for (int j = 0; j < half; ++j) {
          const double lo = j == 0 ? 0.0 : 0.5 * (levels[j - 1] + levels[j]);
          const double hi = j + 1 < half ? 0.5 * (levels[j] + levels[j + 1]) : 1.0;
          const Moments m = sphere.moments(lo, hi);
          next[j] = m.first / m.mass;
          change = std::max(change, std::fabs(next[j] - levels[j]));
        }
        levels = next;
        if (change < 1e-13 * levels.back()) break;
      }
      const Codebook& codebook = lloyd_max_codebook(d, bits, Dist::beta);
      for (int j = 0; j < half; ++j)
        EXPECT_NEAR(codebook.centroids[half + j], levels[j], 1e-10 * levels.back()) << "d=" << d << " b=" << bits;
    }
  }
}

// FlashQuant's "closed-form Lloyd–Max via erfinv": thresholds at the quantiles
// σ√2·erfinv(2i/L − 1), levels at the conditional means. That is quantile
// quantization; Lloyd–Max beats it at every b >= 2 (they coincide at b = 1).
TEST(CodebookTest, QuantileQuantizationIsNotLloydMax) {
  auto erfinv = [](double y) {
    double x = 0;
    for (int i = 0; i < 100; ++i) {
      const double step = (std::erf(x) - y) / (2 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
      x -= step;
      if (std::fabs(step) < 1e-15) break;
    }
    return x;
  };
  constexpr int d = 128;
  const double sigma = 1 / std::sqrt(static_cast<double>(d));
  const GaussianReference gaussian(d);
  for (int bits = 1; bits <= kMaxBits; ++bits) {
    const int levels = 1 << bits;
    std::vector<double> thresholds = {-std::numeric_limits<double>::infinity()};
    for (int i = 1; i < levels; ++i) thresholds.push_back(sigma * std::sqrt(2.0) * erfinv(2.0 * i / levels - 1));
    thresholds.push_back(std::numeric_limits<double>::infinity());
    double quantile_mse = 0;
    for (int i = levels / 2; i < levels; ++i) {  // positive half, doubled
      const Moments m = gaussian.moments(thresholds[i], thresholds[i + 1]);
      quantile_mse += 2 * (m.second - m.first * m.first / m.mass);
    }
    const double lloyd_max_mse = lloyd_max_codebook(d, bits, Dist::gauss).mse_per_coord;
    if (bits == 1) {
      EXPECT_NEAR(quantile_mse, lloyd_max_mse, 1e-9 * lloyd_max_mse);
    } else {
      EXPECT_GT(quantile_mse, lloyd_max_mse * 1.05) << "b=" << bits;
    }
  }
}

TEST(CodebookTest, WellFormedAcrossTheWholeRange) {
  // No NaN, strictly increasing levels, thresholds between neighbours and
  // sane distortion for a spread of dimensions up to 4096 and every width.
  std::vector<int> dims;
  for (int d = 2; d <= 20; ++d) dims.push_back(d);
  for (int d : {31, 63, 65, 100, 127, 129, 255, 257, 500, 1023, 2000, 2048, 3001, 4095, 4096}) dims.push_back(d);
  for (int d : dims) {
    for (int bits = 1; bits <= kMaxBits; ++bits) {
      for (Dist distribution : {Dist::beta, Dist::gauss, Dist::uniform}) {
        const Codebook& codebook = lloyd_max_codebook(d, bits, distribution);
        for (std::size_t i = 1; i < codebook.centroids.size(); ++i) {
          ASSERT_LT(codebook.centroids[i - 1], codebook.boundaries[i - 1]);
          ASSERT_LT(codebook.boundaries[i - 1], codebook.centroids[i]);
        }
        ASSERT_TRUE(std::isfinite(codebook.alpha) && std::isfinite(codebook.marginal_mse_per_coord));
        EXPECT_GT(codebook.d_mse(), 0.0);
        EXPECT_LT(codebook.d_mse(), kPanterDite * std::pow(4.0, -bits) * (distribution == Dist::uniform ? 3 : 1))
            << codebook_distribution_name(distribution) << " d=" << d << " b=" << bits;
        if (distribution == Dist::beta) { EXPECT_NEAR(codebook.alpha, 1 - codebook.d_mse(), 1e-10); }
      }
    }
  }
}

}  // namespace
}  // namespace tqlab
