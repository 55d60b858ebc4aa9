#include "quant/codebook_densities.h"

#include <cassert>

namespace tqlab::density {

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

namespace {

GaussLegendre16 make_gauss_legendre16() {
  GaussLegendre16 rule;
  constexpr int kOrder = GaussLegendre16::kOrder;
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
    rule.node[i] = x;
    rule.weight[i] = 2 / ((1 - x * x) * derivative * derivative);
  }
  return rule;
}

}  // namespace

const GaussLegendre16& gauss_legendre16() {
  static const GaussLegendre16 rule = make_gauss_legendre16();
  return rule;
}

}  // namespace tqlab::density
