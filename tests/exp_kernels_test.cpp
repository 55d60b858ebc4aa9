// exp_kernel and expm1_small against the C library over their ranges, in ulps.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/exp_kernels.h"
#include "core/kernel_set.h"
#include "core/rng.h"

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

// exp_array in every instruction-set form this CPU runs (core/kernel_set.h),
// bit for bit the scalar exp_kernel, on arrays of every length around the
// forms' four- and eight-value steps, in place too.
TEST(ExpKernel, ArrayFormIsTheScalarOneOnEveryKernelSet) {
  Rng rng(5);
  std::vector<double> x;
  for (double special : {-800.0, -708.0, -707.9, -3.5, -0.1, -0.0, 0.0, 1e-300, 0.2, 10.0, 650.0, 709.0}) {
    x.push_back(special);
  }
  while (x.size() < 203) x.push_back(-700.0 + 1400.0 * rng.uniform());
  for (KernelSet set : supported_kernel_sets()) {
    const ScopedKernelSet scoped(set);
    for (int n = 0; n <= static_cast<int>(x.size()); n += (n < 20 ? 1 : 61)) {
      SCOPED_TRACE(std::string(kernel_set_name(set)) + ", n " + std::to_string(n));
      std::vector<double> out(static_cast<std::size_t>(n), -1.0);
      exp_array(n, x.data(), out.data());
      std::vector<double> in_place(x.begin(), x.begin() + n);
      exp_array(n, in_place.data(), in_place.data());
      int differing = 0;
      for (int i = 0; i < n; ++i) {
        const std::uint64_t want = std::bit_cast<std::uint64_t>(exp_kernel(x[static_cast<std::size_t>(i)]));
        differing += std::bit_cast<std::uint64_t>(out[static_cast<std::size_t>(i)]) != want;
        differing += std::bit_cast<std::uint64_t>(in_place[static_cast<std::size_t>(i)]) != want;
      }
      EXPECT_EQ(differing, 0);
    }
  }
}

}  // namespace
}  // namespace tqlab
