// e^x and e^x - 1 in double for whole arrays, in plain arithmetic a compiler
// vectorizes (no libm call per element), the same bits on every machine
// (no FMA: the library is built with -ffp-contract=off). Within 2 ulp of
// std::exp / std::expm1 over the ranges stated (tests/exp_kernels_test.cpp);
// the attention metrics spend most of their non-BLAS time here.
#pragma once

#include <bit>
#include <cstdint>

namespace tqlab {

namespace exp_detail {
constexpr double kLog2e = 1.4426950408889634074;
// ln 2 split so that k * kLn2High is exact for |k| <= 1100 (Cody & Waite).
constexpr double kLn2High = 6.93147180369123816490e-01;
constexpr double kLn2Low = 1.90821492927058770002e-10;
constexpr double kUnderflow = -708.0;

}  // namespace exp_detail

// Both are inline so that loops calling them vectorize.

/// e^x for one value: Cody–Waite reduction x = k ln2 + r, |r| <= ln2/2, and
/// the Taylor series of e^r to r^13 (error below 1e-17), scaled by 2^k.
/// x below -708 gives 0 (e^x there is below the smallest normal double);
/// requires x <= 709.
inline double exp_kernel(double x) {
  const bool underflows = x < exp_detail::kUnderflow;
  x = underflows ? 0.0 : x;
  // k = round(x / ln 2) without a conversion instruction: adding 1.5 * 2^52 + 1023
  // rounds to an integer and leaves k + 1023 in the low bits of the sum.
  const double shifter = 6755399441055744.0 + 1023.0;
  const double shifted = x * exp_detail::kLog2e + shifter;
  const double k = shifted - shifter;
  const double r = (x - k * exp_detail::kLn2High) - k * exp_detail::kLn2Low;
  // e^r = 1 + r + r^2/2! + ... + r^13/13!, Horner from the top.
  double sum = 1.0 / 6227020800.0;  // 1/13!
  sum = sum * r + 1.0 / 479001600.0;
  sum = sum * r + 1.0 / 39916800.0;
  sum = sum * r + 1.0 / 3628800.0;
  sum = sum * r + 1.0 / 362880.0;
  sum = sum * r + 1.0 / 40320.0;
  sum = sum * r + 1.0 / 5040.0;
  sum = sum * r + 1.0 / 720.0;
  sum = sum * r + 1.0 / 120.0;
  sum = sum * r + 1.0 / 24.0;
  sum = sum * r + 1.0 / 6.0;
  sum = sum * r + 0.5;
  sum = sum * r + 1.0;
  sum = sum * r + 1.0;
  // 2^k: k + 1023 moved from the low bits into the exponent field.
  const double scale = std::bit_cast<double>(std::bit_cast<std::uint64_t>(shifted) << 52);
  // Selects between values computed unconditionally (an arithmetic operation
  // inside ?: would be speculation, which -ftrapping-math forbids, and the
  // loops calling this would not vectorize).
  const double value = sum * scale;
  return underflows ? 0.0 : value;
}

/// e^x - 1 for |x| <= 0.5: the Taylor series to x^17 in Horner form, relative
/// error below 1e-16 (no cancellation near 0, where e^x - 1 loses digits).
inline double expm1_small(double x) {
  // x (1 + x/2! + x^2/3! + ... + x^16/17!): the bracket is near 1 for |x| <= 0.5,
  // so the result keeps x's relative precision, with no cancellation.
  double sum = 1.0 / 355687428096000.0;  // 1/17!
  sum = sum * x + 1.0 / 20922789888000.0;
  sum = sum * x + 1.0 / 1307674368000.0;
  sum = sum * x + 1.0 / 87178291200.0;
  sum = sum * x + 1.0 / 6227020800.0;
  sum = sum * x + 1.0 / 479001600.0;
  sum = sum * x + 1.0 / 39916800.0;
  sum = sum * x + 1.0 / 3628800.0;
  sum = sum * x + 1.0 / 362880.0;
  sum = sum * x + 1.0 / 40320.0;
  sum = sum * x + 1.0 / 5040.0;
  sum = sum * x + 1.0 / 720.0;
  sum = sum * x + 1.0 / 120.0;
  sum = sum * x + 1.0 / 24.0;
  sum = sum * x + 1.0 / 6.0;
  sum = sum * x + 0.5;
  sum = sum * x + 1.0;
  return x * sum;
}


/// out[i] = exp_kernel(x[i]) for i < n (out may alias x), in the widest
/// instruction-set form the CPU has (core/kernel_set.h), the same bits in each.
void exp_array(int n, const double* x, double* out);

}  // namespace tqlab
