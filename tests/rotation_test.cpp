// Rotations: the fast Walsh–Hadamard transform against the dense Hadamard
// matrix, orthogonality and determinism of every kind and size, Haar
// distribution checks (Diaconis–Shahshahani trace moments), and outlier
// spreading on an anisotropic data set shaped like real keys.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "quant/rotation.h"

namespace tqlab {
namespace {

// ---------------------------------------------------------------------------
// Plain references, independent of the fast code.

/// Sylvester Hadamard matrix entry H_ij = (-1)^popcount(i & j).
double hadamard_entry(std::size_t i, std::size_t j) {
  return (std::popcount(i & j) % 2 == 0) ? 1.0 : -1.0;
}

/// y = H x / sqrt(B) as a dense product in double. x: B values.
std::vector<double> naive_normalized_hadamard(const std::vector<double>& x) {
  const std::size_t size = x.size();
  std::vector<double> y(size, 0.0);
  for (std::size_t i = 0; i < size; ++i) {
    for (std::size_t j = 0; j < size; ++j) y[i] += hadamard_entry(i, j) * x[j];
    y[i] /= std::sqrt(static_cast<double>(size));
  }
  return y;
}

std::vector<float> gaussian_floats(std::size_t count, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(rng.gaussian());
  return values;
}

double norm(const float* x, int dim) {
  double sum = 0;
  for (int i = 0; i < dim; ++i) sum += static_cast<double>(x[i]) * x[i];
  return std::sqrt(sum);
}

/// Rows i = Π e_i, i.e. Πᵀ row-major (dim * dim floats).
std::vector<float> rotated_basis(const Rotation& rotation) {
  const auto d = static_cast<std::size_t>(rotation.dim());
  std::vector<float> basis(d * d, 0.0f);
  for (std::size_t i = 0; i < d; ++i) basis[i * d + i] = 1.0f;
  rotation.forward(rotation.dim(), basis.data(), basis.data());
  return basis;
}

// ---------------------------------------------------------------------------
// Fast Walsh–Hadamard transform

TEST(FwhtTest, MatchesDenseHadamardForEveryPowerOfTwo) {
  for (int log_n = 0; log_n <= 10; ++log_n) {
    const std::size_t size = std::size_t{1} << log_n;
    std::vector<float> x = gaussian_floats(size, 100 + static_cast<std::uint64_t>(log_n));
    const std::vector<double> expected = naive_normalized_hadamard({x.begin(), x.end()});
    fwht_normalized(x.data(), log_n);
    for (std::size_t i = 0; i < size; ++i) {
      // Outputs are N(0,1)-sized; each passed through log_n float roundings.
      ASSERT_NEAR(x[i], expected[i], 1e-5) << "n = " << size << ", i = " << i;
    }
  }
}

TEST(FwhtTest, FastPathIsBitIdenticalToPortable) {
  for (int log_n = 0; log_n <= 12; ++log_n) {
    const std::size_t size = std::size_t{1} << log_n;
    std::vector<float> fast = gaussian_floats(size, 200 + static_cast<std::uint64_t>(log_n));
    std::vector<float> portable = fast;
    fwht_normalized(fast.data(), log_n);
    fwht_normalized_portable(portable.data(), log_n);
    ASSERT_EQ(std::memcmp(fast.data(), portable.data(), size * sizeof(float)), 0) << "n = " << size;
  }
}

TEST(FwhtTest, IsItsOwnInverse) {
  for (int log_n = 0; log_n <= 10; ++log_n) {
    const std::size_t size = std::size_t{1} << log_n;
    const std::vector<float> original = gaussian_floats(size, 300);
    std::vector<float> x = original;
    fwht_normalized(x.data(), log_n);
    fwht_normalized(x.data(), log_n);
    for (std::size_t i = 0; i < size; ++i) ASSERT_NEAR(x[i], original[i], 1e-5) << "n = " << size;
  }
}

// ---------------------------------------------------------------------------
// Kinds, names, errors

TEST(RotationTest, KindNamesRoundTrip) {
  for (const RotationKind kind : kRotationKindNames.values()) {
    EXPECT_EQ(parse_rotation_kind(rotation_kind_name(kind)), kind);
    EXPECT_EQ(Rotation::make(kind, 8, 0)->kind(), kind);
  }
  EXPECT_FALSE(parse_rotation_kind("Hadamard").has_value());
  EXPECT_FALSE(parse_rotation_kind("").has_value());
}

TEST(RotationTest, HadamardRefusesNonPowerOfTwoNamingAllowedSizes) {
  for (const int dim : {3, 80, 96, 192, kMaxHadamardDim * 2}) {
    try {
      Rotation::make(RotationKind::hadamard, dim, 0);
      ADD_FAILURE() << "accepted dim " << dim;
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("power of two"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(dim)), std::string::npos) << message;
      EXPECT_NE(message.find("rot=haar"), std::string::npos) << message;
    }
  }
}

TEST(RotationTest, RefusesDimensionsOutOfRange) {
  for (const RotationKind kind : kRotationKindNames.values()) {
    EXPECT_THROW(Rotation::make(kind, 0, 0), InputError);
    EXPECT_THROW(Rotation::make(kind, -4, 0), InputError);
  }
  EXPECT_THROW(Rotation::make(RotationKind::haar, kMaxHaarDim + 1, 0), InputError);
}

// ---------------------------------------------------------------------------
// Hadamard rotation against the dense reference

// Two rounds: each round's signs from its own stream of the seed, applied in
// order; the composition equals the two single rounds applied one after the other.
TEST(DoubleHadamardRotationTest, IsTwoSeededRoundsInOrder) {
  const DoubleHadamardRotation rotation(6, 99);
  const HadamardRotation first(6, derive_seed({99, 1})), second(6, derive_seed({99, 2}));
  EXPECT_EQ(rotation.first().signs(), first.signs());
  EXPECT_EQ(rotation.second().signs(), second.signs());
  EXPECT_NE(first.signs(), second.signs()) << "the rounds' signs are independent";
  Rng rng(3);
  std::vector<float> x(64), expected(64), y(64);
  for (float& v : x) v = static_cast<float>(rng.gaussian());
  first.forward(1, x.data(), expected.data());
  second.forward(1, expected.data(), expected.data());
  rotation.forward(1, x.data(), y.data());
  EXPECT_EQ(y, expected);
  EXPECT_THROW(Rotation::make(RotationKind::hadamard2, 96, 0), InputError);
}

// A one-hot vector: one round gives ±1/√d everywhere; two rounds give values
// on the lattice (2k − d)/d^{3/2}, spread (not all equal in magnitude).
TEST(DoubleHadamardRotationTest, OneHotCoordinatesAreNoLongerAllEqual) {
  const int dim = 128;
  std::vector<float> e(dim, 0.0f), one(dim), two(dim);
  e[5] = 1.0f;
  Rotation::make(RotationKind::hadamard, dim, 4)->forward(1, e.data(), one.data());
  Rotation::make(RotationKind::hadamard2, dim, 4)->forward(1, e.data(), two.data());
  std::set<float> one_magnitudes, two_magnitudes;
  for (int i = 0; i < dim; ++i) {
    one_magnitudes.insert(std::fabs(one[static_cast<std::size_t>(i)]));
    two_magnitudes.insert(std::fabs(two[static_cast<std::size_t>(i)]));
  }
  EXPECT_EQ(one_magnitudes.size(), 1u);
  EXPECT_GT(two_magnitudes.size(), 4u);
}

TEST(HadamardRotationTest, SignsComeFromCoinsInOrder) {
  const HadamardRotation rotation(7, 99);
  Rng rng(99);
  for (const float sign : rotation.signs()) EXPECT_EQ(sign, rng.coin() ? -1.0f : 1.0f);
}

TEST(HadamardRotationTest, ForwardAndInverseMatchDenseReference) {
  constexpr std::uint64_t kSeed = 5;
  constexpr int kVectors = 3;
  for (int log_dim = 0; log_dim <= 10; ++log_dim) {
    const auto rotation = Rotation::make(RotationKind::hadamard, 1 << log_dim, kSeed);
    const auto& signs = dynamic_cast<const HadamardRotation&>(*rotation).signs();
    const auto d = static_cast<std::size_t>(rotation->dim());
    const std::vector<float> x = gaussian_floats(kVectors * d, 400);
    std::vector<float> y(x.size()), back(x.size());
    rotation->forward(kVectors, x.data(), y.data());
    rotation->inverse(kVectors, x.data(), back.data());
    for (std::size_t r = 0; r < kVectors; ++r) {
      // forward: H (s ∘ x) / sqrt(B); inverse: s ∘ (H x / sqrt(B)).
      std::vector<double> signed_x(d), plain_x(d);
      for (std::size_t i = 0; i < d; ++i) {
        signed_x[i] = signs[i] * x[r * d + i];
        plain_x[i] = x[r * d + i];
      }
      const std::vector<double> forward_expected = naive_normalized_hadamard(signed_x);
      const std::vector<double> transformed = naive_normalized_hadamard(plain_x);
      for (std::size_t i = 0; i < d; ++i) {
        ASSERT_NEAR(y[r * d + i], forward_expected[i], 1e-5) << "B = " << d;
        ASSERT_NEAR(back[r * d + i], signs[i] * transformed[i], 1e-5) << "B = " << d;
      }
    }
  }
}

TEST(HadamardRotationTest, FusedKernelsMatchPortableStepsBitForBit) {
  // forward = portable(s ∘ x), inverse = s ∘ portable(y), whichever kernel
  // the build picks, so every machine computes the same bits.
  constexpr int kVectors = 3;
  for (int log_dim = 0; log_dim <= 10; ++log_dim) {
    const HadamardRotation rotation(log_dim, 31);
    const auto d = static_cast<std::size_t>(rotation.dim());
    const std::vector<float>& signs = rotation.signs();
    const std::vector<float> x = gaussian_floats(kVectors * d, 450);
    std::vector<float> forward(x.size()), inverse(x.size());
    rotation.forward(kVectors, x.data(), forward.data());
    rotation.inverse(kVectors, x.data(), inverse.data());
    for (std::size_t r = 0; r < kVectors; ++r) {
      std::vector<float> expected_forward(d), expected_inverse(x.begin() + r * d, x.begin() + (r + 1) * d);
      for (std::size_t i = 0; i < d; ++i) expected_forward[i] = x[r * d + i] * signs[i];
      fwht_normalized_portable(expected_forward.data(), log_dim);
      fwht_normalized_portable(expected_inverse.data(), log_dim);
      for (std::size_t i = 0; i < d; ++i) expected_inverse[i] *= signs[i];
      ASSERT_EQ(std::memcmp(expected_forward.data(), &forward[r * d], d * sizeof(float)), 0) << "B = " << d;
      ASSERT_EQ(std::memcmp(expected_inverse.data(), &inverse[r * d], d * sizeof(float)), 0) << "B = " << d;
    }
  }
}

TEST(HadamardRotationTest, SpreadsEveryOneHotVectorEvenly) {
  // Π e_i = s_i H(:, i) / sqrt(B): every coordinate has magnitude exactly 1/sqrt(B).
  for (int log_dim = 0; log_dim <= 10; ++log_dim) {
    const auto rotation = Rotation::make(RotationKind::hadamard, 1 << log_dim, 17);
    const auto d = static_cast<std::size_t>(rotation->dim());
    const std::vector<float> basis = rotated_basis(*rotation);
    const float magnitude = std::abs(basis[0]);
    EXPECT_NEAR(magnitude, 1.0 / std::sqrt(static_cast<double>(d)), 1e-7);
    for (const float value : basis) ASSERT_EQ(std::abs(value), magnitude) << "B = " << d;
  }
}

// ---------------------------------------------------------------------------
// Properties every kind must have, for every size

struct RotationCase {
  RotationKind kind;
  int dim;
};

std::string case_name(const testing::TestParamInfo<RotationCase>& info) {
  return std::string(rotation_kind_name(info.param.kind)) + "_" + std::to_string(info.param.dim);
}

std::vector<RotationCase> all_cases() {
  std::vector<RotationCase> cases;
  for (int dim = 1; dim <= 1024; dim *= 2) cases.push_back({RotationKind::hadamard, dim});
  for (const int dim : {1, 2, 8, 64, 128, 1024}) cases.push_back({RotationKind::hadamard2, dim});
  for (const int dim : {1, 2, 3, 4, 5, 8, 16, 32, 64, 80, 96, 128, 192, 256, 384, 512, 576}) {
    cases.push_back({RotationKind::haar, dim});
  }
  for (const int dim : {1, 7, 128}) cases.push_back({RotationKind::none, dim});
  return cases;
}

class RotationPropertyTest : public testing::TestWithParam<RotationCase> {
 protected:
  static constexpr std::uint64_t kSeed = 1234;
  static constexpr int kVectors = 5;
};

TEST_P(RotationPropertyTest, IsOrthogonal) {
  // The rows of rotated_basis are the columns of Π; ΠᵀΠ = I means they are
  // orthonormal. Large sizes check a spread subset of 96 rows against each other.
  const auto rotation = Rotation::make(GetParam().kind, GetParam().dim, kSeed);
  const auto d = static_cast<std::size_t>(rotation->dim());
  const std::vector<float> basis = rotated_basis(*rotation);
  std::vector<std::size_t> rows;
  const std::size_t stride = std::max<std::size_t>(1, d / 96);
  for (std::size_t i = 0; i < d; i += stride) rows.push_back(i);
  double worst = 0;
  for (const std::size_t a : rows) {
    for (const std::size_t b : rows) {
      double dot = 0;
      for (std::size_t k = 0; k < d; ++k) dot += static_cast<double>(basis[a * d + k]) * basis[b * d + k];
      worst = std::max(worst, std::abs(dot - (a == b ? 1.0 : 0.0)));
    }
  }
  EXPECT_LE(worst, 1e-5);
}

// forward_scaled and inverse_scaled are the plain passes (scale, then rotate;
// rotate, then scale) bit for bit, on strided rows, in place, with scales of
// zero, of both signs and near the float range, and report non-finite output.
TEST_P(RotationPropertyTest, ScaledFormsAreScalingAndRotatingBitForBit) {
  const auto rotation = Rotation::make(GetParam().kind, GetParam().dim, kSeed);
  const auto d = static_cast<std::size_t>(rotation->dim());
  constexpr std::int64_t kRows = 6;
  const std::size_t stride = d + 5;
  const std::vector<float> strided = gaussian_floats(kRows * stride, 610);
  const std::vector<float> scales = {0.37f, 0.0f, -2.5f, 3.0e-39f, 1.0f, 7.1e30f};
  const auto bits_equal = [](const float* a, const float* b, std::size_t count) {
    return std::memcmp(a, b, count * sizeof(float)) == 0;
  };

  std::vector<float> expected(kRows * d), fused(kRows * d);
  for (std::size_t r = 0; r < kRows; ++r) {
    for (std::size_t i = 0; i < d; ++i) expected[r * d + i] = strided[r * stride + i] * scales[r];
  }
  rotation->forward(kRows, expected.data(), expected.data());
  rotation->forward_scaled(kRows, strided.data(), static_cast<std::int64_t>(stride), scales.data(), fused.data());
  ASSERT_TRUE(bits_equal(expected.data(), fused.data(), fused.size())) << "forward_scaled, strided";
  std::vector<float> in_place(kRows * d);
  for (std::size_t r = 0; r < kRows; ++r) std::copy_n(strided.begin() + r * stride, d, in_place.begin() + r * d);
  rotation->forward_scaled(kRows, in_place.data(), static_cast<std::int64_t>(d), scales.data(), in_place.data());
  ASSERT_TRUE(bits_equal(expected.data(), in_place.data(), in_place.size())) << "forward_scaled, in place";

  const std::vector<float> y = gaussian_floats(kRows * d, 611);
  std::vector<float> rotated(kRows * d);
  rotation->inverse(kRows, y.data(), rotated.data());
  const float sentinel = -123.0f;
  std::vector<float> out(kRows * stride, sentinel);
  // Scales that keep every value finite (the last row's 7.1e30 times a unit-variance value would not).
  std::vector<float> finite_scales = scales;
  finite_scales.back() = 1e3f;
  ASSERT_TRUE(
      rotation->inverse_scaled(kRows, y.data(), finite_scales.data(), out.data(), static_cast<std::int64_t>(stride)));
  for (std::size_t r = 0; r < kRows; ++r) {
    for (std::size_t i = 0; i < d; ++i) {
      const float want = rotated[r * d + i] * finite_scales[r];
      ASSERT_TRUE(bits_equal(&want, &out[r * stride + i], 1)) << "inverse_scaled row " << r << " value " << i;
    }
    for (std::size_t i = d; i < stride; ++i) ASSERT_EQ(out[r * stride + i], sentinel) << "wrote past a row";
  }
  std::vector<float> same = y;
  ASSERT_TRUE(
      rotation->inverse_scaled(kRows, same.data(), finite_scales.data(), same.data(), static_cast<std::int64_t>(d)));
  for (std::size_t r = 0; r < kRows; ++r) {
    ASSERT_TRUE(bits_equal(&same[r * d], &out[r * stride], d)) << "inverse_scaled in place, row " << r;
  }
  // 7.1e30 * 1e10 overflows: reported, whichever row holds it.
  std::vector<float> large = y;
  for (float& value : large) value *= 1e10f;
  EXPECT_FALSE(
      rotation->inverse_scaled(kRows, large.data(), scales.data(), out.data(), static_cast<std::int64_t>(stride)));
  std::vector<float> one_infinite = y;
  one_infinite[2 * d + d / 2] = INFINITY;
  EXPECT_FALSE(rotation->inverse_scaled(kRows, one_infinite.data(), finite_scales.data(), out.data(),
                                        static_cast<std::int64_t>(stride)));
}

// A single result beyond the float range is reported wherever it lies in the
// row and whichever row holds it (the SIMD forms gather their finiteness
// checks across registers and rows). The input is a rotated one-hot vector,
// so the inverse puts about 2 at one position and rounding noise (at most
// ~1e-6) elsewhere; times 2e38 only that position overflows.
TEST_P(RotationPropertyTest, InverseScaledReportsALoneOverflowAnywhere) {
  const auto rotation = Rotation::make(GetParam().kind, GetParam().dim, kSeed);
  const auto d = static_cast<std::size_t>(rotation->dim());
  constexpr std::size_t kRows = 3;
  const std::vector<float> scales(kRows, 2e38f);
  std::vector<float> y(kRows * d), out(kRows * d);
  const std::size_t step = std::max<std::size_t>(1, d / 256);  // every position up to 256, a spread of them beyond
  for (std::size_t position = 0; position < d; position += step) {
    std::fill(y.begin(), y.end(), 0.0f);
    const std::size_t row = position % kRows;
    y[row * d + position] = 2.0f;
    rotation->forward(1, &y[row * d], &y[row * d]);
    EXPECT_FALSE(rotation->inverse_scaled(kRows, y.data(), scales.data(), out.data(), static_cast<std::int64_t>(d)))
        << "overflow at row " << row << " position " << position << " not reported";
    // Without the overflow: finite, and reported so.
    std::vector<float> small_scales(kRows, 1.0f);
    EXPECT_TRUE(
        rotation->inverse_scaled(kRows, y.data(), small_scales.data(), out.data(), static_cast<std::int64_t>(d)))
        << "row " << row << " position " << position;
  }
}

TEST_P(RotationPropertyTest, InverseUndoesForwardAndNormsArePreserved) {
  const auto rotation = Rotation::make(GetParam().kind, GetParam().dim, kSeed);
  const int d = rotation->dim();
  const std::vector<float> x = gaussian_floats(static_cast<std::size_t>(kVectors * d), 500);
  std::vector<float> y(x.size()), back(x.size());
  rotation->forward(kVectors, x.data(), y.data());
  rotation->inverse(kVectors, y.data(), back.data());
  for (int r = 0; r < kVectors; ++r) {
    const double x_norm = norm(&x[static_cast<std::size_t>(r * d)], d);
    EXPECT_NEAR(norm(&y[static_cast<std::size_t>(r * d)], d), x_norm, 1e-5 * x_norm);
    for (int i = 0; i < d; ++i) {
      const auto at = static_cast<std::size_t>(r * d + i);
      ASSERT_NEAR(back[at], x[at], 1e-5) << "vector " << r << ", coordinate " << i;
    }
  }
}

TEST_P(RotationPropertyTest, InPlaceEqualsOutOfPlace) {
  const auto rotation = Rotation::make(GetParam().kind, GetParam().dim, kSeed);
  const std::vector<float> x = gaussian_floats(static_cast<std::size_t>(kVectors * rotation->dim()), 600);
  std::vector<float> out(x.size()), in_place = x;
  rotation->forward(kVectors, x.data(), out.data());
  rotation->forward(kVectors, in_place.data(), in_place.data());
  EXPECT_EQ(in_place, out);
  rotation->inverse(kVectors, x.data(), out.data());
  in_place = x;
  rotation->inverse(kVectors, in_place.data(), in_place.data());
  EXPECT_EQ(in_place, out);
}

TEST_P(RotationPropertyTest, EachVectorsResultIgnoresTheBatch) {
  // A vector rotates to the same bits alone or anywhere in a batch of 7
  // (batched kernels must not change any summation order).
  constexpr int kBatch = 7;
  const auto rotation = Rotation::make(GetParam().kind, GetParam().dim, kSeed);
  const auto d = static_cast<std::size_t>(rotation->dim());
  const std::vector<float> x = gaussian_floats(kBatch * d, 650);
  std::vector<float> batched(x.size()), single(d);
  for (const bool forward : {true, false}) {
    if (forward) {
      rotation->forward(kBatch, x.data(), batched.data());
    } else {
      rotation->inverse(kBatch, x.data(), batched.data());
    }
    for (std::size_t r = 0; r < kBatch; ++r) {
      if (forward) {
        rotation->forward(1, &x[r * d], single.data());
      } else {
        rotation->inverse(1, &x[r * d], single.data());
      }
      ASSERT_EQ(std::memcmp(single.data(), &batched[r * d], d * sizeof(float)), 0)
          << (forward ? "forward" : "inverse") << ", vector " << r;
    }
  }
}

TEST_P(RotationPropertyTest, SameSeedSameBitsOtherSeedsDiffer) {
  const auto first = Rotation::make(GetParam().kind, GetParam().dim, kSeed);
  const auto again = Rotation::make(GetParam().kind, GetParam().dim, kSeed);
  const std::vector<float> basis = rotated_basis(*first);
  EXPECT_EQ(std::memcmp(basis.data(), rotated_basis(*again).data(), basis.size() * sizeof(float)), 0);
  if (GetParam().kind == RotationKind::none) return;
  // A 1-dimensional rotation is +1 or -1, so look for any of several seeds that differs.
  bool any_differs = false;
  for (std::uint64_t other = kSeed + 1; other <= kSeed + 8 && !any_differs; ++other) {
    any_differs = rotated_basis(*Rotation::make(GetParam().kind, GetParam().dim, other)) != basis;
  }
  EXPECT_TRUE(any_differs);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, RotationPropertyTest, testing::ValuesIn(all_cases()), case_name);

// ---------------------------------------------------------------------------
// Haar distribution

TEST(HaarRotationTest, MatrixAccessorAgreesWithForward) {
  const HaarRotation rotation(12, 3);
  const std::vector<float> basis = rotated_basis(rotation);
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 12; ++j) {
      EXPECT_EQ(basis[static_cast<std::size_t>(j * 12 + i)], rotation.matrix()[static_cast<std::size_t>(i * 12 + j)]);
    }
  }
}

TEST(HaarRotationTest, ForwardAndInverseMatchDenseReference) {
  // Plain double products with matrix(): y = Π x, x = Πᵀ y.
  constexpr int kVectors = 6;  // a full tile of four and an edge of two
  for (const int dim : {3, 16, 80, 96, 130}) {
    const HaarRotation rotation(dim, 4);
    const auto d = static_cast<std::size_t>(dim);
    const std::vector<float>& m = rotation.matrix();
    const std::vector<float> x = gaussian_floats(kVectors * d, 800);
    std::vector<float> y(x.size()), back(x.size());
    rotation.forward(kVectors, x.data(), y.data());
    rotation.inverse(kVectors, x.data(), back.data());
    for (std::size_t r = 0; r < kVectors; ++r) {
      for (std::size_t i = 0; i < d; ++i) {
        double forward = 0, inverse = 0;
        for (std::size_t k = 0; k < d; ++k) {
          forward += static_cast<double>(m[i * d + k]) * x[r * d + k];
          inverse += static_cast<double>(m[k * d + i]) * x[r * d + k];
        }
        ASSERT_NEAR(y[r * d + i], forward, 1e-5) << "B = " << dim;
        ASSERT_NEAR(back[r * d + i], inverse, 1e-5) << "B = " << dim;
      }
    }
  }
}

TEST(HaarRotationTest, TraceMomentsEntrySignsAndMomentsMatchHaarMeasure) {
  // For Π Haar on O(B): E tr Π = 0, E (tr Π)^2 = 1 (B >= 2), E (tr Π)^4 = 3
  // (B >= 4) (Diaconis & Shahshahani 1994: the moments of tr Π equal those of
  // N(0,1) up to order B). Each entry is a coordinate of a uniform unit vector:
  // E Π_ij = 0, E Π_ij^2 = 1/B, E Π_ij^4 = 3 / (B (B + 2)),
  // E Π_ij^8 = 105 / (B (B + 2) (B + 4) (B + 6)), and its sign is a fair coin. Householder QR without the sign fix
  // gives Π(0,0) <= 0 always and a biased trace, which these checks catch.
  constexpr int kSeeds = 3000;
  for (const int dim : {3, 8}) {
    const auto d = static_cast<std::size_t>(dim);
    double trace1 = 0, trace2 = 0, trace4 = 0;
    double diagonal1 = 0, corner2 = 0, corner4 = 0;
    int positive_first_column = 0;
    for (int s = 0; s < kSeeds; ++s) {
      const HaarRotation rotation(dim, derive_seed({77, static_cast<std::uint64_t>(s)}));
      const std::vector<float>& m = rotation.matrix();
      double trace = 0;
      for (std::size_t i = 0; i < d; ++i) trace += m[i * d + i];
      trace1 += trace;
      trace2 += trace * trace;
      trace4 += trace * trace * trace * trace;
      diagonal1 += trace / dim;
      const double corner = m[0];
      corner2 += corner * corner;
      corner4 += corner * corner * corner * corner;
      for (std::size_t i = 0; i < d; ++i) positive_first_column += m[i * d] > 0.0f;
    }
    const double n = kSeeds;
    SCOPED_TRACE("B = " + std::to_string(dim));
    // Var(tr) = 1, Var(tr^2) = 3 - 1 = 2, Var(tr^4) = E tr^8 - 9 = 105 - 9 (for B >= 8).
    EXPECT_NEAR(trace1 / n, 0.0, 4.0 * std::sqrt(1.0 / n));
    EXPECT_NEAR(trace2 / n, 1.0, 4.0 * std::sqrt(2.0 / n));
    if (dim >= 8) {
      EXPECT_NEAR(trace4 / n, 3.0, 4.0 * std::sqrt(96.0 / n));
    }
    // Mean diagonal entry: each has sd 1/sqrt(B), the average of B of them less.
    EXPECT_NEAR(diagonal1 / n, 0.0, 4.0 / std::sqrt(dim * n));
    const double second = 1.0 / dim;
    const double fourth = 3.0 / (dim * (dim + 2.0));
    EXPECT_NEAR(corner2 / n, second, 4.0 * std::sqrt((fourth - second * second) / n));
    const double eighth = 105.0 / (dim * (dim + 2.0) * (dim + 4.0) * (dim + 6.0));
    EXPECT_NEAR(corner4 / n, fourth, 4.0 * std::sqrt((eighth - fourth * fourth) / n));
    const double entries = n * dim;
    EXPECT_NEAR(positive_first_column / entries, 0.5, 4.0 * 0.5 / std::sqrt(entries));
  }
}

TEST(HaarRotationTest, OneHotVectorsLoseTheirSpike) {
  // Each column of a Haar Π is uniform on the sphere, so
  // P(|Π_ij| > t) <= 2 exp(-B t^2 / 2); with t = sqrt(8 ln B / B) the union
  // over all B^2 entries fails with probability below 2 / B^2 (the bound is
  // vacuous below B = 64). The identity keeps the spike at 1; Hadamard reaches
  // the floor 1/sqrt(B) (SpreadsEveryOneHotVectorEvenly).
  for (const int dim : {64, 80, 96, 128, 192, 256, 384}) {
    const double bound = std::sqrt(8.0 * std::log(dim) / dim);
    for (const RotationKind kind : {RotationKind::haar, RotationKind::none}) {
      const std::vector<float> basis = rotated_basis(*Rotation::make(kind, dim, 21));
      float largest = 0;
      for (const float value : basis) largest = std::max(largest, std::abs(value));
      if (kind == RotationKind::none) {
        EXPECT_EQ(largest, 1.0f) << "B = " << dim;
      } else {
        EXPECT_LE(largest, bound) << "B = " << dim;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Outlier channels, as in real keys

/// Per-coordinate RMS after rotating `vectors` Gaussian vectors whose channel
/// `outlier` has 20x the standard deviation of the others.
std::vector<double> rotated_channel_rms(const Rotation& rotation, int vectors, int outlier) {
  const auto d = static_cast<std::size_t>(rotation.dim());
  std::vector<float> x = gaussian_floats(static_cast<std::size_t>(vectors) * d, 700);
  for (int r = 0; r < vectors; ++r) x[static_cast<std::size_t>(r) * d + static_cast<std::size_t>(outlier)] *= 20.0f;
  rotation.forward(vectors, x.data(), x.data());
  std::vector<double> rms(d, 0.0);
  for (int r = 0; r < vectors; ++r) {
    for (std::size_t i = 0; i < d; ++i) rms[i] += static_cast<double>(x[r * d + i]) * x[r * d + i];
  }
  for (double& value : rms) value = std::sqrt(value / vectors);
  return rms;
}

TEST(RotationOutlierTest, HadamardFlattensAnOutlierChannelNoneKeepsIt) {
  // Hadamard: Var(y_i) = Σ_j Π_ij^2 σ_j^2 = (399 + B) / B for every i, so the
  // per-coordinate RMS is flat up to sampling noise (about 1.6% per coordinate
  // for 2048 vectors).
  constexpr int kVectors = 2048;
  for (const int dim : {64, 128, 256}) {
    SCOPED_TRACE("B = " + std::to_string(dim));
    const auto flat = rotated_channel_rms(*Rotation::make(RotationKind::hadamard, dim, 8), kVectors, 5);
    const auto raw = rotated_channel_rms(*Rotation::make(RotationKind::none, dim, 8), kVectors, 5);
    const auto [flat_min, flat_max] = std::minmax_element(flat.begin(), flat.end());
    const auto [raw_min, raw_max] = std::minmax_element(raw.begin(), raw.end());
    EXPECT_LT(*flat_max / *flat_min, 1.5);
    EXPECT_NEAR(*flat_max, std::sqrt((399.0 + dim) / dim), 0.1 * std::sqrt((399.0 + dim) / dim));
    EXPECT_GT(*raw_max / *raw_min, 15.0);
  }
}

TEST(RotationOutlierTest, HaarSpreadsAnOutlierChannelAsItsColumnPredicts) {
  // Haar: Var(y_i) = 1 + 399 Π(i, outlier)^2. The column is a random unit
  // vector, so the outlier's energy lands unevenly (no flat RMS as with
  // Hadamard), but no coordinate keeps more than the one-hot bound allows,
  // and each coordinate's variance follows its column entry.
  constexpr int kVectors = 2048;
  constexpr int kOutlier = 5;
  for (const int dim : {64, 128, 256}) {
    SCOPED_TRACE("B = " + std::to_string(dim));
    const HaarRotation rotation(dim, 8);
    const auto rms = rotated_channel_rms(rotation, kVectors, kOutlier);
    const double bound = std::sqrt(8.0 * std::log(dim) / dim);
    EXPECT_LT(*std::max_element(rms.begin(), rms.end()), 1.1 * std::sqrt(1.0 + 399.0 * bound * bound));
    for (int i = 0; i < dim; ++i) {
      const double entry = rotation.matrix()[static_cast<std::size_t>(i * dim + kOutlier)];
      const double variance = 1.0 + 399.0 * entry * entry;
      // The sample variance of 2048 Gaussians has relative sd sqrt(2/2048) = 3%.
      EXPECT_NEAR(rms[static_cast<std::size_t>(i)] * rms[static_cast<std::size_t>(i)], variance,
                  5.0 * variance * std::sqrt(2.0 / kVectors))
          << "coordinate " << i;
    }
  }
}

}  // namespace
}  // namespace tqlab
