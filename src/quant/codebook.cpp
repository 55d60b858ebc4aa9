// Lloyd–Max scalar codebooks for a rotated unit-vector coordinate.
//
// Sources: S. P. Lloyd, "Least squares quantization in PCM" (1957/1982) and
// J. Max, "Quantizing for minimum distortion" (1960) for the optimality
// conditions (centroid = conditional mean of its cell, threshold = midpoint
// of neighbouring centroids); Zandieh et al., "TurboQuant" (arXiv:2504.19874),
// for the coordinate marginal f_d (its lemma on a random point of the
// sphere) and Theorem 1's bounds
// 4^−b <= d·MSE <= (√3·π/2)·4^−b; the numpy reproduction for the d = 128 constants and
// alpha = E⟨Q(u), u⟩ = 1 − D_mse. (FlashQuant's "closed-form Lloyd–Max via
// erfinv" places thresholds at quantiles: that is quantile quantization, not
// Lloyd–Max, and is deliberately not used.)
//
// A codebook has no packed byte layout of its own; the quantizers store the
// level index code_of(t) in b bits.
//
// Numerics, all deterministic (no sampling): the densities and their cell
// integrals are quant/codebook_densities.h.
//  * The Lloyd fixed point is found by Newton's method on G(c) = m(c) − c
//    (m = conditional means of the cells the midpoints of c define), whose
//    Jacobian is tridiagonal; a line search on ‖G‖ and a plain Lloyd step as
//    fallback keep it globally convergent. Plain Lloyd converges linearly and
//    ever more slowly as levels are added (~800 iterations for 1e-15 at
//    b = 4); Newton needs at most 10 from the companding (Panter–Dite) start,
//    whose point density ∝ f^(1/3) is asymptotically optimal.
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
#include "quant/codebook_densities.h"

namespace tqlab {
namespace {

using namespace density;

/// The Lloyd iteration has converged when one more Lloyd step (centroid ←
/// conditional mean of its cell) would move no centroid by more than this
/// fraction of the largest centroid. Rounding leaves ~1e-15 at the fixed point.
constexpr double kConvergedRelativeStep = 1e-13;
// Newton reaches the tolerance in at most 10 iterations over d = 2..4096,
// b = 1..8 (checked for every d); the cap (LloydMaxSolverLimits) only bounds
// a case that would stall, and such a case throws.

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
