// splitmix64, xoshiro256** and the Gaussian sampler: published reference
// outputs, pinned samples, and the moments of the distributions.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <set>

#include <gtest/gtest.h>

#include "core/rng.h"

namespace tqlab {
namespace {

TEST(RngTest, Splitmix64MatchesPublishedOutputsFromStateZero) {
  std::uint64_t state = 0;
  const std::uint64_t expected[] = {0xe220a8397b1dcdafULL, 0x6e789e6aa1b965f4ULL,
                                    0x06c45d188009454fULL, 0xf88bb8a8724c81ecULL};
  for (const std::uint64_t value : expected) EXPECT_EQ(splitmix64_next(state), value);
}

TEST(RngTest, Splitmix64MatchesReferenceOutputsFromSeed1234567) {
  // Vigna's splitmix64.c seeded with 1234567.
  std::uint64_t state = 1234567;
  const std::uint64_t expected[] = {6457827717110365317ULL, 3203168211198807973ULL,
                                    9817491932198370423ULL, 4593380528125082431ULL,
                                    16408922859458223821ULL};
  for (const std::uint64_t value : expected) EXPECT_EQ(splitmix64_next(state), value);
}

TEST(RngTest, Xoshiro256StarStarMatchesReferenceOutputsFromState1234) {
  // Outputs of the reference xoshiro256starstar.c from state {1, 2, 3, 4}.
  Rng rng = Rng::from_state({1, 2, 3, 4});
  const std::uint64_t expected[] = {11520ULL,
                                    0ULL,
                                    1509978240ULL,
                                    1215971899390074240ULL,
                                    1216172134540287360ULL,
                                    607988272756665600ULL,
                                    16172922978634559625ULL,
                                    8476171486693032832ULL,
                                    10595114339597558777ULL,
                                    2904607092377533576ULL};
  for (const std::uint64_t value : expected) EXPECT_EQ(rng.next_u64(), value);
}

TEST(RngTest, SeedFillsStateWithFourSplitmix64Steps) {
  std::uint64_t state = 42;
  std::array<std::uint64_t, 4> words{};
  for (auto& word : words) word = splitmix64_next(state);
  Rng seeded(42);
  Rng reference = Rng::from_state(words);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(seeded.next_u64(), reference.next_u64()) << "output " << i;
}

TEST(RngTest, UniformIsTheTop53BitsScaled) {
  Rng rng(7);
  Rng raw(7);
  for (int i = 0; i < 1000; ++i) {
    const double value = rng.uniform();
    ASSERT_EQ(value, static_cast<double>(raw.next_u64() >> 11) * 0x1.0p-53);
    ASSERT_GE(value, 0.0);
    ASSERT_LT(value, 1.0);
  }
}

TEST(RngTest, CoinIsTheTopBitAndBalanced) {
  Rng rng(11);
  Rng raw(11);
  constexpr int kFlips = 100000;
  int heads = 0;
  for (int i = 0; i < kFlips; ++i) {
    const bool coin = rng.coin();
    ASSERT_EQ(coin, (raw.next_u64() >> 63) != 0);
    heads += coin ? 1 : 0;
  }
  // Binomial(n, 1/2): sd = sqrt(n) / 2.
  EXPECT_NEAR(heads, kFlips / 2, 4.0 * std::sqrt(kFlips) / 2.0);
}

TEST(RngTest, FirstGaussiansArePinned) {
  // Our own sampler's first outputs from seed 0, written as exact hex floats:
  // any change to splitmix64, xoshiro256**, uniform() or the polar method
  // changes every random object and is caught here.
  Rng rng(0);
  const double expected[] = {0x1.323a82a4bc9e5p-1,  0x1.76a54f2c0effap+0,  -0x1.ca445408b789ap-1,
                             -0x1.81270d2ddbad5p-3, -0x1.3532999190f0ap+1, 0x1.1b72138aac96p+0};
  for (const double value : expected) EXPECT_EQ(rng.gaussian(), value);
}

TEST(RngTest, GaussianMomentsAndTailsMatchStandardNormal) {
  constexpr int kSamples = 1000000;
  Rng rng(2024);
  double sum1 = 0, sum2 = 0, sum3 = 0, sum4 = 0;
  int beyond1 = 0, beyond2 = 0, beyond3 = 0;
  for (int i = 0; i < kSamples; ++i) {
    const double x = rng.gaussian();
    const double x2 = x * x;
    sum1 += x;
    sum2 += x2;
    sum3 += x2 * x;
    sum4 += x2 * x2;
    beyond1 += std::abs(x) > 1.0;
    beyond2 += std::abs(x) > 2.0;
    beyond3 += std::abs(x) > 3.0;
  }
  const double n = kSamples;
  // Raw moments of N(0,1): 0, 1, 0, 3; the sd of each sample mean is
  // sqrt(Var(x^k) / n) with Var(x) = 1, Var(x^2) = 2, Var(x^3) = 15, Var(x^4) = 96.
  EXPECT_NEAR(sum1 / n, 0.0, 4.0 * std::sqrt(1.0 / n));
  EXPECT_NEAR(sum2 / n, 1.0, 4.0 * std::sqrt(2.0 / n));
  EXPECT_NEAR(sum3 / n, 0.0, 4.0 * std::sqrt(15.0 / n));
  EXPECT_NEAR(sum4 / n, 3.0, 4.0 * std::sqrt(96.0 / n));
  // Two-sided tail probabilities 2 (1 - Phi(t)).
  for (const auto& [count, p] : {std::pair{beyond1, 0.31731050786291410},
                                 std::pair{beyond2, 0.04550026389635842},
                                 std::pair{beyond3, 0.00269979606326019}}) {
    EXPECT_NEAR(count / n, p, 4.0 * std::sqrt(p * (1.0 - p) / n));
  }
}

TEST(RngTest, DeriveSeedIsPinned) {
  // Every random object of every stored result depends on this value.
  EXPECT_EQ(derive_seed({0, 1, 2, 3, 4}), 0x83a254bee33be7bcULL);
}

TEST(RngTest, DeriveSeedSeparatesOrderLengthAndValues) {
  EXPECT_NE(derive_seed({1, 0}), derive_seed({0, 1}));
  EXPECT_NE(derive_seed({0}), derive_seed({0, 0}));
  EXPECT_NE(derive_seed({}), derive_seed({0}));
  EXPECT_NE(derive_seed({1, 2, 3}), derive_seed({3, 2, 1}));
  // Every small tuple of (run seed, role, layer) gets its own seed, whatever
  // its length.
  std::set<std::uint64_t> seen;
  int tuples = 0;
  for (std::uint64_t a = 0; a < 16; ++a) {
    seen.insert(derive_seed({a}));
    ++tuples;
    for (std::uint64_t b = 0; b < 16; ++b) {
      seen.insert(derive_seed({a, b}));
      ++tuples;
      for (std::uint64_t c = 0; c < 16; ++c) {
        seen.insert(derive_seed({a, b, c}));
        ++tuples;
      }
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), tuples);
}

TEST(RngTest, DeriveSeedFlipsHalfTheBitsForAnyInputBit) {
  // Avalanche: flipping any one bit of any part changes each output bit with
  // probability about 1/2, so 5 parts x 64 bits give a mean near 32 changed bits.
  const std::array<std::uint64_t, 5> base = {12345, 1, 7, 3, 2};
  const auto derive = [](const std::array<std::uint64_t, 5>& p) {
    return derive_seed({p[0], p[1], p[2], p[3], p[4]});
  };
  const std::uint64_t reference = derive(base);
  double total = 0;
  int trials = 0;
  for (std::size_t part = 0; part < base.size(); ++part) {
    for (int bit = 0; bit < 64; ++bit) {
      auto flipped = base;
      flipped[part] ^= std::uint64_t{1} << bit;
      const int changed = std::popcount(derive(flipped) ^ reference);
      EXPECT_GE(changed, 12) << "part " << part << " bit " << bit;
      EXPECT_LE(changed, 52) << "part " << part << " bit " << bit;
      total += changed;
      ++trials;
    }
  }
  // Binomial(64, 1/2) per trial: sd 4; the mean of 320 trials has sd 4/sqrt(320).
  EXPECT_NEAR(total / trials, 32.0, 4.0 * 4.0 / std::sqrt(static_cast<double>(trials)));
}

}  // namespace
}  // namespace tqlab
