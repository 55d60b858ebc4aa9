// Lloyd–Max scalar codebooks for a rotated unit-vector coordinate.
//
// Sources: S. P. Lloyd, "Least squares quantization in PCM" (1957/1982) and
// J. Max, "Quantizing for minimum distortion" (1960) for the optimality
// conditions (centroid = conditional mean of its cell, threshold = midpoint
// of neighbouring centroids); Zandieh et al., "TurboQuant" (arXiv:2504.19874),
// for the coordinate marginal f_d (its lemma on a random point of the
// sphere) and Theorem 1's bounds
// 4^−b <= d·MSE <= (√3·π/2)·4^−b; seed 001 for the d = 128 constants and
// alpha = E⟨Q(u), u⟩ = 1 − D_mse. (Seed 004's "closed-form Lloyd–Max via
// erfinv" places thresholds at quantiles: that is quantile quantization, not
// Lloyd–Max, and is deliberately not used.)
//
// A codebook has no packed byte layout of its own; the quantizers store the
// level index code_of(t) in b bits.
//
// Numerics, all deterministic (no sampling):
//  * Every density is even, so only the positive half is solved: with L = 2^b
//    (even) levels the middle threshold is 0 and the K = L/2 positive cells are
//    [0, e_1], [e_1, e_2], ..., [e_{K−1}, end]; the negative half is the mirror.
//  * Cell masses of f_d are regularized incomplete beta functions: t² of a
//    sphere coordinate is Beta(½, (d−1)/2). First moments have the closed form
//    ∫_t^1 s f_d(s) ds = C_d (1 − t²)^((d−1)/2) / (d − 1); second moments
//    reduce to the marginal of R^(d+2):
//    ∫_lo^hi t² f_d = C_d/(d−1) [t (1 − t²)^((d−1)/2)]_hi^lo + P_{d+2}(lo, hi) / d.
//    For N(0, σ²): erf / erfc and σ² φ.
//  * The Lloyd fixed point is found by Newton's method on G(c) = m(c) − c
//    (m = conditional means of the cells the midpoints of c define), whose
//    Jacobian is tridiagonal; a line search on ‖G‖ and a plain Lloyd step as
//    fallback keep it globally convergent. Plain Lloyd converges linearly and
//    ever more slowly as levels are added (~800 iterations for 1e-15 at
//    b = 4); Newton needs at most 10 from the companding (Panter–Dite) start,
//    whose point density ∝ f^(1/3) is asymptotically optimal.
//  * Narrow cells (b = 8 has 128 per half) are integrated directly by
//    Gauss–Legendre: as differences of cumulative values their masses keep
//    only ~13 digits, and that noise would stall Newton above 1e-13.
#include "quant/codebook.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <tuple>

#include "core/error.h"

namespace tqlab {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// The Lloyd iteration has converged when one more Lloyd step (centroid ←
/// conditional mean of its cell) would move no centroid by more than this
/// fraction of the largest centroid. Rounding leaves ~1e-15 at the fixed point.
constexpr double kConvergedRelativeStep = 1e-13;
/// Newton reaches the tolerance in at most 10 iterations over d = 2..4096,
/// b = 1..8 (checked for every d); the cap (LloydMaxSolverLimits) only bounds
/// a case that would stall, and such a case throws.

// ---------------------------------------------------------------------------
// Special functions

/// log(Γ(a + ½) / Γ(a)) for a > 0.
double log_gamma_ratio_half(double a) {
  // lgamma(a + ½) − lgamma(a) loses about 12 digits at a = 2048 (both terms
  // ≈ 1.4e4, their difference ≈ 3.8). Instead walk a down with
  // Γ(x + 1) = x Γ(x): ratio(a) = ratio(a − 1) · (a − ½) / (a − 1), a sum of
  // small positive terms, until lgamma's absolute error is a few ulp.
  double log_ratio = 0;
  while (a > 16) {
    a -= 1;
    log_ratio += std::log1p(0.5 / a);
  }
  return log_ratio + (std::lgamma(a + 0.5) - std::lgamma(a));
}

/// The continued fraction K of the regularized incomplete beta function,
///   I_x(p, q) = x^p (1 − x)^q / (p B(p, q)) · K,
///   K = 1 / (1 + d_1 / (1 + d_2 / (1 + ...))),
///   d_{2m+1} = −(p + m)(p + q + m) x / ((p + 2m)(p + 2m + 1)),
///   d_{2m}   = m (q − m) x / ((p + 2m − 1)(p + 2m)),
/// evaluated with the modified Lentz method. Converges quickly for
/// x < (p + 1) / (p + q + 2); callers use the symmetry
/// I_x(p, q) = 1 − I_{1−x}(q, p) on the other side.
double incomplete_beta_fraction(double x, double p, double q) {
  constexpr double kTiny = 1e-300;  // keeps Lentz's ratios away from 0/0
  constexpr int kMaxTerms = 10000;  // ~√max(p, q) terms are needed; p <= 2049 here
  auto guard = [](double value) { return std::fabs(value) < kTiny ? kTiny : value; };

  double numerator_ratio = 1.0;  // Lentz's C
  double denominator_ratio = 1.0 / guard(1.0 - (p + q) * x / (p + 1.0));  // Lentz's D
  double fraction = denominator_ratio;
  for (int m = 1; m < kMaxTerms; ++m) {
    const double even = m * (q - m) * x / ((p + 2 * m - 1) * (p + 2 * m));
    denominator_ratio = 1.0 / guard(1.0 + even * denominator_ratio);
    numerator_ratio = guard(1.0 + even / numerator_ratio);
    fraction *= denominator_ratio * numerator_ratio;

    const double odd = -(p + m) * (p + q + m) * x / ((p + 2 * m) * (p + 2 * m + 1));
    denominator_ratio = 1.0 / guard(1.0 + odd * denominator_ratio);
    numerator_ratio = guard(1.0 + odd / numerator_ratio);
    const double factor = denominator_ratio * numerator_ratio;
    fraction *= factor;
    if (std::fabs(factor - 1.0) <= 3e-16) return fraction;
  }
  assert(false && "incomplete beta continued fraction did not converge");
  return fraction;
}

// ---------------------------------------------------------------------------
// Densities on the positive half line. Each is even; `end` is the end of its
// support (1 or +inf). A Point caches what the cells touching t need.

struct Point {
  double t = 0;
  double below = 0;             ///< ∫_0^t f
  double above = 0;             ///< ∫_t^end f  (below + above = ½)
  bool below_is_exact = false;  ///< `below` was computed directly (else `above` was)
  double log_weight = 0;        ///< log(1 − t²) (beta) or −t²/(2σ²) (gauss)
  double pdf = 0;               ///< f(t) for t < end (0 at end, where it is not used)
};

/// 16-point Gauss–Legendre nodes and weights on [−1, 1] (nodes by Newton's
/// method on the three-term Legendre recurrence; computed once).
struct GaussLegendre16 {
  static constexpr int kOrder = 16;
  double node[kOrder];
  double weight[kOrder];

  GaussLegendre16() {
    for (int i = 0; i < kOrder; ++i) {
      double x = std::cos(std::numbers::pi * (i + 0.75) / (kOrder + 0.5));  // near the i-th root
      double derivative = 1;
      for (int iteration = 0; iteration < 100; ++iteration) {
        double p_prev = 1, p = x;  // P_0, P_1
        for (int n = 2; n <= kOrder; ++n) {
          const double p_next = ((2 * n - 1) * x * p - (n - 1) * p_prev) / n;
          p_prev = p;
          p = p_next;
        }
        derivative = kOrder * (x * p - p_prev) / (x * x - 1);
        const double dx = p / derivative;
        x -= dx;
        if (std::fabs(dx) < 1e-16) break;
      }
      node[i] = x;
      weight[i] = 2 / ((1 - x * x) * derivative * derivative);
    }
  }
};

/// ∫_lo^hi g by the 16-point rule: exact to rounding for the narrow cells it
/// is used on (g analytic, varying on a scale >= the cell width).
template <class Integrand>
double integrate_narrow(double lo, double hi, Integrand&& integrand) {
  static const GaussLegendre16 rule;
  const double half_width = 0.5 * (hi - lo), middle = 0.5 * (hi + lo);
  double sum = 0;
  for (int i = 0; i < GaussLegendre16::kOrder; ++i)
    sum += rule.weight[i] * integrand(middle + half_width * rule.node[i]);
  return sum * half_width;
}

/// ∫_lo^hi f. Narrow cells are integrated directly: as the difference of two
/// cumulative values (each ≈ 0.1..0.5) a cell of mass 1e-3 would keep only
/// ~13 digits, and that noise is what limits the Lloyd fixed point at b = 8.
/// Wide cells take the difference of the representation (mass below or above)
/// that carries full relative precision at both ends.
template <class Density>
double cell_mass(const Density& density, const Point& lo, const Point& hi) {
  if (lo.t >= hi.t) return 0;
  if (density.is_narrow(lo.t, hi.t))
    return integrate_narrow(lo.t, hi.t, [&](double t) { return density.pdf(t); });
  return hi.below_is_exact ? hi.below - lo.below : lo.above - hi.above;
}

/// ∫_lo^hi t f(t) dt. Both densities have an upper first-moment tail
/// scale · exp(exponent · log_weight(t)); the difference of two tails is
/// written with expm1 of the exactly formed drop in log_weight, so that
/// narrow cells keep full precision.
template <class Density>
double cell_first_moment(const Density& density, const Point& lo, const Point& hi) {
  if (lo.t >= hi.t) return 0;
  const double exponent = density.tail_exponent();
  const double tail_lo = density.tail_scale() * std::exp(exponent * lo.log_weight);
  return -tail_lo * std::expm1(exponent * density.log_weight_drop(lo.t, hi.t));
}

/// ∫_lo^hi (t − level)² f(t) dt: directly on narrow cells, else from the
/// moments (∫t²f − 2·level·∫tf + level²·∫f, fine where the cell is wide).
template <class Density>
double cell_squared_error(const Density& density, const Point& lo, const Point& hi, double level) {
  if (lo.t >= hi.t) return 0;
  if (density.is_narrow(lo.t, hi.t)) {
    return integrate_narrow(lo.t, hi.t, [&](double t) { return (t - level) * (t - level) * density.pdf(t); });
  }
  return density.second_moment(lo, hi) - 2 * level * cell_first_moment(density, lo, hi) +
         level * level * cell_mass(density, lo, hi);
}

/// f_d: one coordinate of a uniform unit vector in R^d, on [0, 1].
/// `dim` may be non-integer (the companding start uses f_d^(1/3) ∝ f_{(d+6)/3}).
class SphereCoordinateDensity {
 public:
  explicit SphereCoordinateDensity(double dim)
      : SphereCoordinateDensity((dim - 1) / 2,
                                0.5 * std::log(std::numbers::pi) - log_gamma_ratio_half((dim - 1) / 2)) {}

  double end() const { return 1.0; }
  /// A point beyond which no mass is left (for bracketing searches).
  double search_limit() const { return 1.0; }

  /// f_d(t) = (1 − t²)^(a−1) / B(a, ½), 0 <= t < 1.
  double pdf(double t) const { return std::exp((shape_ - 1) * std::log1p(-t * t) - log_beta_); }

  /// Cells the 16-point rule integrates to rounding: no wider than the spread
  /// 1/√d, and at least their own width away from the singular point t = 1.
  bool is_narrow(double lo, double hi) const {
    const double width = hi - lo;
    return width * width * (2 * shape_ + 1) <= 1.0 && 1.0 - hi >= width;
  }

  Point at(double t) const {
    Point point;
    point.t = std::min(t, 1.0);
    if (t >= 1.0) {
      point.below = 0.5;
      point.log_weight = -kInfinity;
      return point;
    }
    const double t2 = t * t;
    point.log_weight = std::log1p(-t2);
    point.pdf = std::exp((shape_ - 1) * point.log_weight - log_beta_);
    // t² ~ Beta(½, a): ∫_0^t f = ½ I_{t²}(½, a), ∫_t^1 f = ½ I_{1−t²}(a, ½);
    // both share the factor t (1 − t²)^a / B(a, ½).
    const double common = t > 0 ? std::exp(std::log(t) + shape_ * point.log_weight - log_beta_) : 0.0;
    if (t2 <= 1.5 / (shape_ + 2.5)) {  // where the fraction for I_{t²}(½, a) converges fast
      point.below_is_exact = true;
      point.below = common * incomplete_beta_fraction(t2, 0.5, shape_);
      point.above = 0.5 - point.below;
    } else {
      point.above = common / (2 * shape_) * incomplete_beta_fraction(1.0 - t2, shape_, 0.5);
      point.below = 0.5 - point.above;
    }
    return point;
  }

  /// The first-moment tail ∫_t^1 s f_d(s) ds = C_d (1 − t²)^((d−1)/2) / (d − 1)
  /// as scale · exp(exponent · log(1 − t²)), C_d = 1/B(a, ½), d − 1 = 2a.
  double tail_scale() const { return std::exp(-log_beta_) / (2 * shape_); }
  double tail_exponent() const { return shape_; }
  /// log(1 − hi²) − log(1 − lo²) = log(1 − (hi − lo)(hi + lo)/(1 − lo²)), without
  /// the cancellation of subtracting two nearly equal logarithms.
  double log_weight_drop(double lo, double hi) const {
    if (hi >= 1.0) return -kInfinity;
    return std::log1p(-std::min(1.0, (hi - lo) * (hi + lo) / (1 - lo * lo)));
  }

  /// ∫_lo^hi t² f_d(t) dt by parts (see the file comment).
  double second_moment(const Point& lo, const Point& hi) const {
    if (lo.t >= hi.t) return 0;
    auto boundary_term = [&](const Point& p) {
      return p.t >= 1.0 ? 0.0 : p.t * tail_scale() * std::exp(shape_ * p.log_weight);
    };
    // f_{d+2}: shape a + 1, B(a + 1, ½) = B(a, ½) · a / (a + ½).
    const SphereCoordinateDensity raised(shape_ + 1, log_beta_ + std::log(shape_ / (shape_ + 0.5)));
    const double raised_mass = cell_mass(raised, raised.at(lo.t), raised.at(hi.t));
    return boundary_term(lo) - boundary_term(hi) + raised_mass / (2 * shape_ + 1);
  }

 private:
  /// shape a = (d − 1)/2; log_beta = log B(a, ½).
  SphereCoordinateDensity(double shape, double log_beta) : shape_(shape), log_beta_(log_beta) {}

  double shape_;
  double log_beta_;
};

/// N(0, σ²) on [0, ∞).
class GaussianDensity {
 public:
  explicit GaussianDensity(double sigma) : sigma_(sigma) {}

  double end() const { return kInfinity; }
  /// A point beyond which no mass is left in double precision (erfc(40/√2) ≈ 4e-350).
  double search_limit() const { return 40 * sigma_; }

  double pdf(double t) const {
    const double z = t / sigma_;
    return std::exp(-0.5 * z * z) / (sigma_ * std::sqrt(2 * std::numbers::pi));
  }

  /// Cells the 16-point rule integrates to rounding: finite and no wider than σ.
  bool is_narrow(double lo, double hi) const { return hi - lo <= sigma_; }

  Point at(double t) const {
    Point point;
    point.t = t;
    const double z = t / (sigma_ * std::numbers::sqrt2);
    point.log_weight = -z * z;
    if (t == kInfinity) {
      point.below = 0.5;
      return point;
    }
    point.pdf = pdf(t);
    if (z <= 1.0) {
      point.below_is_exact = true;
      point.below = 0.5 * std::erf(z);
      point.above = 0.5 - point.below;
    } else {
      point.above = 0.5 * std::erfc(z);
      point.below = 0.5 - point.above;
    }
    return point;
  }

  /// The first-moment tail σ² φ(t) = σ/√(2π) · exp(−t²/(2σ²)).
  double tail_scale() const { return sigma_ / std::sqrt(2 * std::numbers::pi); }
  double tail_exponent() const { return 1.0; }
  /// −hi²/(2σ²) + lo²/(2σ²), formed as a product (no cancellation).
  double log_weight_drop(double lo, double hi) const {
    return hi == kInfinity ? -kInfinity : -(hi - lo) * (hi + lo) / (2 * sigma_ * sigma_);
  }

  /// ∫_lo^hi t² φ(t) dt = σ² [t φ(t)]_hi^lo + σ² ∫_lo^hi φ.
  double second_moment(const Point& lo, const Point& hi) const {
    if (lo.t >= hi.t) return 0;
    auto boundary_term = [&](const Point& p) {
      return p.t == kInfinity ? 0.0 : p.t * tail_scale() * std::exp(p.log_weight);
    };
    return boundary_term(lo) - boundary_term(hi) + sigma_ * sigma_ * cell_mass(*this, lo, hi);
  }

 private:
  double sigma_;
};

// ---------------------------------------------------------------------------
// Lloyd–Max on the positive half

/// The point t >= 0 where ∫_t^end f = upper_mass (0 < upper_mass < ½):
/// Newton's method on the tail, kept inside a shrinking bisection bracket.
template <class Density>
double upper_quantile(const Density& density, double upper_mass, double bracket_hi) {
  double lo = 0, hi = bracket_hi;
  double t = 0.5 * (lo + hi);
  for (int iteration = 0; iteration < 200; ++iteration) {
    const Point point = density.at(t);
    const double excess = point.above - upper_mass;  // decreasing in t
    if (excess > 0) lo = t; else hi = t;
    double next = point.pdf > 0 ? t + excess / point.pdf : 0.5 * (lo + hi);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::fabs(next - t) <= 1e-12 * t) return next;  // a starting point: no need for more
    t = next;
  }
  return t;
}

/// Cells of the positive half for centroids c (K ascending positive values):
/// edges 0, midpoints, end; their masses and first moments.
template <class Density>
struct HalfCells {
  std::vector<Point> edges;   // K + 1
  std::vector<double> mass;   // K
  std::vector<double> mean;   // K conditional means (NaN when a cell is empty)
  double residual = 0;        // ‖mean − c‖₂ / c_K: what the line search decreases
  double lloyd_change = 0;    // max |mean − c| / c_K: the relative change a Lloyd step would make

  void evaluate(const Density& density, const std::vector<double>& centroids) {
    const std::size_t cells = centroids.size();
    edges.resize(cells + 1);
    mass.resize(cells);
    mean.resize(cells);
    edges[0] = density.at(0.0);
    for (std::size_t j = 1; j < cells; ++j) edges[j] = density.at(0.5 * (centroids[j - 1] + centroids[j]));
    edges[cells] = density.at(density.end());
    double sum_squares = 0, largest = 0;
    for (std::size_t j = 0; j < cells; ++j) {
      mass[j] = cell_mass(density, edges[j], edges[j + 1]);
      mean[j] = cell_first_moment(density, edges[j], edges[j + 1]) / mass[j];
      const double change = mean[j] - centroids[j];
      sum_squares += change * change;
      largest = std::max(largest, std::fabs(change));
    }
    residual = std::sqrt(sum_squares) / centroids.back();
    lloyd_change = largest / centroids.back();
  }
};

/// True when c is strictly ascending inside (0, end) — a valid set of positive centroids.
bool is_valid_half(const std::vector<double>& centroids, double end) {
  if (!(centroids.front() > 0) || !(centroids.back() < end)) return false;
  for (std::size_t j = 1; j < centroids.size(); ++j)
    if (!(centroids[j] > centroids[j - 1])) return false;
  return true;
}

/// Positive-half centroids (K ascending) of the Lloyd–Max quantizer of
/// `density` with 2K levels. `companding` is the density ∝ f^(1/3), whose
/// quantiles give the starting point.
template <class Density>
std::vector<double> lloyd_max_half(const Density& density, const Density& companding, int half_levels,
                                   int max_iterations) {
  const std::size_t cells = static_cast<std::size_t>(half_levels);
  std::vector<double> centroids(cells);
  for (std::size_t j = 0; j < cells; ++j) {
    const double upper_mass = 0.5 * (1.0 - (j + 0.5) / static_cast<double>(cells));
    centroids[j] = upper_quantile(companding, upper_mass, companding.search_limit());
  }

  HalfCells<Density> state, trial;
  state.evaluate(density, centroids);
  std::vector<double> lower(cells), diagonal(cells), upper(cells), step(cells), candidate(cells);
  int iteration = 0;
  for (; iteration < max_iterations; ++iteration) {
    if (state.lloyd_change <= kConvergedRelativeStep) break;
    // Jacobian of G_j = m_j − c_j: the mean of cell j moves with its edges as
    // ∂m/∂hi = f(hi)(hi − m)/mass, ∂m/∂lo = f(lo)(m − lo)/mass, and each
    // interior edge is the midpoint of two centroids (factor ½).
    for (std::size_t j = 0; j < cells; ++j) {
      const Point& lo = state.edges[j];
      const Point& hi = state.edges[j + 1];
      lower[j] = j > 0 ? 0.5 * lo.pdf * (state.mean[j] - lo.t) / state.mass[j] : 0.0;
      upper[j] = j + 1 < cells ? 0.5 * hi.pdf * (hi.t - state.mean[j]) / state.mass[j] : 0.0;
      diagonal[j] = lower[j] + upper[j] - 1.0;
      step[j] = -(state.mean[j] - centroids[j]);
    }
    // Thomas algorithm for the tridiagonal system J · step = −G.
    for (std::size_t j = 1; j < cells; ++j) {
      const double w = lower[j] / diagonal[j - 1];
      diagonal[j] -= w * upper[j - 1];
      step[j] -= w * step[j - 1];
    }
    step[cells - 1] /= diagonal[cells - 1];
    for (std::size_t j = cells - 1; j-- > 0;) step[j] = (step[j] - upper[j] * step[j + 1]) / diagonal[j];

    // Line search on ‖G‖, halving the step a few times at most.
    bool accepted = false;
    for (double scale = 1.0; scale >= 1.0 / 256 && !accepted; scale *= 0.5) {
      for (std::size_t j = 0; j < cells; ++j) candidate[j] = centroids[j] + scale * step[j];
      if (!is_valid_half(candidate, density.end())) continue;
      trial.evaluate(density, candidate);
      accepted = trial.residual < state.residual;
    }
    if (accepted) {
      centroids.swap(candidate);
      std::swap(state, trial);
    } else {
      // Plain Lloyd step: each centroid moves to its cell's mean. It never
      // increases the MSE and keeps the order.
      centroids = state.mean;
      state.evaluate(density, centroids);
    }
  }
  // Checked in every build (an assert would vanish in Release): a codebook off
  // its fixed point would give wrong D_mse and alpha without a word.
  if (!(state.lloyd_change <= kConvergedRelativeStep)) {
    throw InternalError(fmt::format(
        "Lloyd-Max codebook with {} levels did not converge in {} iterations: one more Lloyd step would move a "
        "centroid by {:.3g} of the largest, above the tolerance {:.3g}",
        2 * half_levels, iteration, state.lloyd_change, kConvergedRelativeStep));
  }
  return centroids;
}

/// The step s of the uniform quantizer with levels ±(j − ½)s, j = 1..K, that
/// minimizes the MSE under `density` (support [0, 1]): the root of
///   ½ dMSE/ds = Σ_j k_j (k_j s mass_j − first_j),  k_j = j − ½,
/// (the edge terms vanish because the error is continuous at midpoints).
template <class Density>
double optimal_uniform_step(const Density& density, int half_levels) {
  // Summed by parts over the edges e_j = j·s (j = 1..K−1), so that every
  // term is a positive tail value rather than a difference of two:
  //   Σ_j k_j² mass_j = ¼·above(0) + Σ_j 2j·above(e_j),
  //   Σ_j k_j first_j = ½·tail1(0) + Σ_j tail1(e_j),
  // where tail1(t) = ∫_t^end u f(u) du.
  auto tail1 = [&](const Point& p) {
    return density.tail_scale() * std::exp(density.tail_exponent() * p.log_weight);
  };
  auto slope = [&](double step_size) {
    const Point origin = density.at(0.0);
    double curvature = 0.25 * origin.above, pull = 0.5 * tail1(origin);
    for (int j = 1; j < half_levels; ++j) {
      const Point edge = density.at(j * step_size);
      curvature += 2 * j * edge.above;
      pull += tail1(edge);
    }
    return step_size * curvature - pull;
  };

  // Steps that push levels beyond the support give the MSE extra stationary
  // points (at d = 3 the (K−1)-level optimum sits at s = 1/(K−1); at d = 2,
  // whose density is infinite at ±1, there are many). A brute-force scan of
  // s (see the test) puts the global minimum always at the first minimum
  // with every level inside the support, s <= 1/(K − ½); so scan up from
  // small steps to the first sign change of the slope there, then solve.
  const double widest = 1.0 / (half_levels - 0.5);
  constexpr double kScanRatio = 1.5;
  double lo = 1e-3 * widest;
  double slope_lo = slope(lo);
  while (slope_lo >= 0 && lo > 1e-12) slope_lo = slope(lo *= 0.5);
  double hi = lo, slope_hi = slope_lo;
  while (slope_hi < 0 && hi < widest) {
    lo = hi;
    slope_lo = slope_hi;
    hi = std::min(widest, hi * kScanRatio);
    slope_hi = slope(hi);
  }
  if (slope_hi < 0) return widest;  // not reached for d = 2..4096, b = 1..8

  // Illinois regula falsi: secant steps inside a bracket that always shrinks.
  int last_side = 0;
  double s = hi;
  for (int iteration = 0; iteration < 200 && hi - lo > 1e-15 * hi; ++iteration) {
    s = (lo * slope_hi - hi * slope_lo) / (slope_hi - slope_lo);
    if (!(s > lo && s < hi)) s = 0.5 * (lo + hi);
    const double value = slope(s);
    if (value == 0) break;
    if (value < 0) {
      lo = s;
      slope_lo = value;
      if (last_side == -1) slope_hi *= 0.5;
      last_side = -1;
    } else {
      hi = s;
      slope_hi = value;
      if (last_side == 1) slope_lo *= 0.5;
      last_side = 1;
    }
  }
  return s;
}

/// MSE of a symmetric quantizer (positive-half centroids c, K ascending, with
/// midpoint thresholds) under `density`, and E[t · Q(t)]; both over the whole line.
struct QuantizerMoments {
  double mse = 0;
  double correlation = 0;  ///< E[t Q(t)]
};

template <class Density>
QuantizerMoments quantizer_moments(const Density& density, const std::vector<double>& centroids) {
  HalfCells<Density> cells;
  cells.evaluate(density, centroids);
  QuantizerMoments moments;
  for (std::size_t j = 0; j < centroids.size(); ++j) {
    const Point& lo = cells.edges[j];
    const Point& hi = cells.edges[j + 1];
    moments.mse += cell_squared_error(density, lo, hi, centroids[j]);
    moments.correlation += centroids[j] * cell_first_moment(density, lo, hi);
  }
  moments.mse *= 2;  // both halves
  moments.correlation *= 2;
  return moments;
}

std::vector<double> positive_half_centroids(int dim, int bits, CodebookDistribution distribution,
                                           int max_iterations) {
  const int half_levels = 1 << (bits - 1);
  switch (distribution) {
    case CodebookDistribution::beta:
      // f_d^(1/3) ∝ (1 − t²)^((d−3)/6) = f_{d'} with (d' − 3)/2 = (d − 3)/6.
      return lloyd_max_half(SphereCoordinateDensity(dim), SphereCoordinateDensity((dim + 6) / 3.0), half_levels,
                            max_iterations);
    case CodebookDistribution::gauss: {
      // φ_σ^(1/3) ∝ φ_{σ√3}.
      const double sigma = 1.0 / std::sqrt(static_cast<double>(dim));
      return lloyd_max_half(GaussianDensity(sigma), GaussianDensity(sigma * std::sqrt(3.0)), half_levels,
                            max_iterations);
    }
    case CodebookDistribution::uniform: {
      const double step = optimal_uniform_step(SphereCoordinateDensity(dim), half_levels);
      std::vector<double> centroids(half_levels);
      for (int j = 0; j < half_levels; ++j) centroids[j] = (j + 0.5) * step;
      return centroids;
    }
  }
  assert(false);
  return {};
}

}  // namespace

std::string_view codebook_distribution_name(CodebookDistribution distribution) {
  switch (distribution) {
    case CodebookDistribution::beta: return "beta";
    case CodebookDistribution::gauss: return "gauss";
    case CodebookDistribution::uniform: return "uniform";
  }
  return "?";
}

std::optional<CodebookDistribution> parse_codebook_distribution(std::string_view name) {
  for (auto distribution : kCodebookDistributions) {
    if (name == codebook_distribution_name(distribution)) return distribution;
  }
  return std::nullopt;
}

int Codebook::code_of(double t) const {
  assert(!std::isnan(t));
  return static_cast<int>(std::lower_bound(boundaries.begin(), boundaries.end(), t) - boundaries.begin());
}

namespace {
void validate_codebook_arguments(int dim, int bits, CodebookDistribution distribution) {
  if (dim < kCodebookMinDim || dim > kCodebookMaxDim)
    fail("codebook: dim {} is out of range (expected {}..{})", dim, kCodebookMinDim, kCodebookMaxDim);
  if (bits < kCodebookMinBits || bits > kCodebookMaxBits)
    fail("codebook: bits {} is out of range (expected {}..{})", bits, kCodebookMinBits, kCodebookMaxBits);
  if (codebook_distribution_name(distribution) == "?")
    fail("codebook: unknown distribution {} (expected beta, gauss or uniform)", static_cast<int>(distribution));
}
}  // namespace

Codebook compute_codebook(int dim, int bits, CodebookDistribution distribution, const LloydMaxSolverLimits& limits) {
  validate_codebook_arguments(dim, bits, distribution);
  std::vector<double> half;
  try {
    half = positive_half_centroids(dim, bits, distribution, limits.max_iterations);
  } catch (const InternalError& error) {
    throw InternalError(fmt::format("codebook d={}, b={}, {}: {}", dim, bits, codebook_distribution_name(distribution),
                                    error.what()));
  }
  Codebook codebook;
  codebook.dim = dim;
  codebook.bits = bits;
  codebook.distribution = distribution;
  codebook.centroids.reserve(2 * half.size());
  for (auto it = half.rbegin(); it != half.rend(); ++it) codebook.centroids.push_back(-*it);
  codebook.centroids.insert(codebook.centroids.end(), half.begin(), half.end());
  for (std::size_t i = 0; i + 1 < codebook.centroids.size(); ++i)
    codebook.boundaries.push_back(0.5 * (codebook.centroids[i] + codebook.centroids[i + 1]));

  const QuantizerMoments marginal = quantizer_moments(SphereCoordinateDensity(dim), half);
  codebook.marginal_mse_per_coord = marginal.mse;
  codebook.alpha = dim * marginal.correlation;
  codebook.mse_per_coord = distribution == CodebookDistribution::gauss
                               ? quantizer_moments(GaussianDensity(1.0 / std::sqrt(static_cast<double>(dim))), half).mse
                               : marginal.mse;
  codebook.centroids_f.assign(codebook.centroids.begin(), codebook.centroids.end());
  codebook.boundaries_f.assign(codebook.boundaries.begin(), codebook.boundaries.end());
  return codebook;
}

const Codebook& lloyd_max_codebook(int dim, int bits, CodebookDistribution distribution) {
  // One slot per key, created under the map's lock; the codebook itself is
  // computed outside that lock (once, by whichever thread gets there first),
  // so threads needing different codebooks do not wait for each other.
  struct Slot {
    std::once_flag once;
    std::unique_ptr<const Codebook> codebook;
  };
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int>, std::unique_ptr<Slot>> slots;

  validate_codebook_arguments(dim, bits, distribution);  // before a slot is made for them

  Slot* slot = nullptr;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto& entry = slots[{dim, bits, static_cast<int>(distribution)}];
    if (!entry) entry = std::make_unique<Slot>();
    slot = entry.get();
  }
  std::call_once(slot->once, [&] {
    slot->codebook = std::make_unique<const Codebook>(compute_codebook(dim, bits, distribution));
  });
  return *slot->codebook;
}

}  // namespace tqlab
