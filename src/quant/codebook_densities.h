// The densities Lloyd–Max codebooks are solved for (quant/codebook.h), on the
// positive half line, and integrals over their cells, to full double precision.
//
//  * Every density is even, so only the positive half is solved: with L = 2^b
//    (even) levels the middle threshold is 0 and the K = L/2 positive cells are
//    [0, e_1], [e_1, e_2], ..., [e_{K−1}, end]; the negative half is the mirror.
//  * Cell masses of f_d are regularized incomplete beta functions: t² of a
//    sphere coordinate is Beta(½, (d−1)/2). First moments have the closed form
//    ∫_t^1 s f_d(s) ds = C_d (1 − t²)^((d−1)/2) / (d − 1); second moments
//    reduce to the marginal of R^(d+2):
//    ∫_lo^hi t² f_d = C_d/(d−1) [t (1 − t²)^((d−1)/2)]_hi^lo + P_{d+2}(lo, hi) / d.
//    For N(0, σ²): erf / erfc and σ² φ.
//  * Narrow cells (b = 8 has 128 per half) are integrated directly by
//    Gauss–Legendre: as differences of cumulative values their masses keep
//    only ~13 digits, and that noise would stall the solver above 1e-13.
// Each density is even; `end` is the end of its support (1 or +inf). A Point
// caches what the cells touching t need.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace tqlab::density {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------
// Special functions

/// log(Γ(a + ½) / Γ(a)) for a > 0.
double log_gamma_ratio_half(double a);

/// The continued fraction K of the regularized incomplete beta function,
///   I_x(p, q) = x^p (1 − x)^q / (p B(p, q)) · K,
///   K = 1 / (1 + d_1 / (1 + d_2 / (1 + ...))),
///   d_{2m+1} = −(p + m)(p + q + m) x / ((p + 2m)(p + 2m + 1)),
///   d_{2m}   = m (q − m) x / ((p + 2m − 1)(p + 2m)),
/// evaluated with the modified Lentz method. Converges quickly for
/// x < (p + 1) / (p + q + 2); callers use the symmetry
/// I_x(p, q) = 1 − I_{1−x}(q, p) on the other side.
double incomplete_beta_fraction(double x, double p, double q);

// ---------------------------------------------------------------------------
// Cells

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
};
const GaussLegendre16& gauss_legendre16();

/// ∫_lo^hi g by the 16-point rule: exact to rounding for the narrow cells it
/// is used on (g analytic, varying on a scale >= the cell width).
template <class Integrand>
double integrate_narrow(double lo, double hi, Integrand&& integrand) {
  const GaussLegendre16& rule = gauss_legendre16();
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

}  // namespace tqlab::density
