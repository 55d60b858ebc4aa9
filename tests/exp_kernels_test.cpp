// exp_kernel and expm1_small against the C library over their ranges, in ulps.
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "eval/exp_kernels.h"

namespace tqlab {
namespace {

// Distance in units in the last place between two finite doubles of one sign.
double ulps(double a, double b) {
  if (a == b) return 0;
  return std::abs(a - b) / (std::nextafter(std::abs(b), INFINITY) - std::abs(b));
}

TEST(ExpKernel, WithinTwoUlpOfStdExp) {
  Rng rng(17);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = -708.0 + 1417.0 * rng.uniform();
    worst = std::max(worst, ulps(exp_kernel(x), std::exp(x)));
  }
  for (double x : {0.0, 1e-300, -1e-300, 1.0, -1.0, 0.5 * std::log(2.0), 700.0, -707.9, 709.0}) {
    worst = std::max(worst, ulps(exp_kernel(x), std::exp(x)));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(exp_kernel(-709.0), 0.0);
  EXPECT_EQ(exp_kernel(-1e6), 0.0);
  EXPECT_EQ(exp_kernel(0.0), 1.0);
}

TEST(Expm1Small, WithinTwoUlpOfStdExpm1NearZero) {
  Rng rng(3);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = (rng.uniform() - 0.5) * std::pow(10.0, -16 * rng.uniform());  // |x| <= 0.5, all scales
    worst = std::max(worst, ulps(expm1_small(x), std::expm1(x)));
  }
  for (double x : {0.5, -0.5, 1e-300, -1e-20, 0.25}) worst = std::max(worst, ulps(expm1_small(x), std::expm1(x)));
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(expm1_small(0.0), 0.0);
}

TEST(ExpKernel, ArrayFormIsTheScalarOne) {
  double x[7] = {-800, -3.5, -0.1, 0, 0.2, 10, 650};
  double out[7];
  exp_array(7, x, out);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(out[i], exp_kernel(x[i]));
}

}  // namespace
}  // namespace tqlab
