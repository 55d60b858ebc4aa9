// Rotations on structured inputs (docs/ROTATIONS.md): one-hot keys,
// outlier-heavy synthetic keys and real keys through the real quantizer
// (norm=fp32, so that only the rotation and codebook act) under haar,
// hadamard and hadamard2. What is measured (theory/structured_inputs.h):
// D_mse = mean ‖x − x̃‖²/‖x‖², and the debiased <x̃, x>/‖x‖², 1 when unbiased.
// The numbers these tests hold are the ones docs/ROTATIONS.md prints.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/tensor_file.h"
#include "kv/kv_dump.h"
#include "kv/synthetic_kv.h"
#include "quant/codebook.h"
#include "quant/registry.h"
#include "theory/structured_inputs.h"

namespace tqlab {
namespace {

/// A Monte Carlo comparison passes within this many standard errors.
constexpr double kZ = 4;

const Codebook& beta_codebook(int dim, int bits) { return lloyd_max_codebook(dim, bits, CodebookDistribution::beta); }

struct Measured {
  StructuredInputStats plain, debiased;
};

Measured measure(const std::string& rotation, int bits, int dim, const std::vector<float>& x, int seeds) {
  const std::string spec = "tq:b=" + std::to_string(bits) + ",rot=" + rotation + ",norm=fp32";
  const auto count = static_cast<std::int64_t>(x.size()) / dim;
  return {measure_structured_input(*make_quantizer(spec), dim, count, x.data(), seeds, 7),
          measure_structured_input(*make_quantizer(spec + ",debias"), dim, count, x.data(), seeds, 7)};
}

// One Hadamard round maps e_i to ±1/√d in every coordinate, so the error is
// deterministic: d·(c − 1/√d)² with c the level 1/√d falls in, and
// <x̃, x> = √d·c (÷ alpha with debias). The review's numbers at d = 128, b = 2:
// D_mse 0.255 (theory 0.116), <x̃,x> 1.505, debiased 1.70.
TEST(RotationStructureTest, OneHotUnderOneHadamardRoundIsTheExactPredictedError) {
  constexpr int kDim = 128;
  constexpr double kFloatTolerance = 1e-4;  // the quantizer computes in float
  const auto x = one_hot_vectors(kDim);
  for (int bits = 2; bits <= 4; ++bits) {
    const Codebook& codebook = beta_codebook(kDim, bits);
    const double coordinate = 1.0 / std::sqrt(kDim);
    const double level = codebook.centroids[static_cast<std::size_t>(codebook.code_of(coordinate))];
    const Measured hadamard = measure("hadamard", bits, kDim, x, 2);
    EXPECT_NEAR(hadamard.plain.d_mse.mean, kDim * (level - coordinate) * (level - coordinate), kFloatTolerance) << bits;
    EXPECT_NEAR(hadamard.plain.inner_product.mean, std::sqrt(kDim) * level, kFloatTolerance) << bits;
    EXPECT_NEAR(hadamard.debiased.inner_product.mean, std::sqrt(kDim) * level / codebook.alpha, kFloatTolerance)
        << bits;
    EXPECT_EQ(hadamard.plain.d_mse.standard_error, 0.0) << "the same error for every e_i and every seed";
  }
  const Measured review = measure("hadamard", 2, kDim, x, 2);
  EXPECT_NEAR(review.plain.d_mse.mean, 0.2552, 5e-5);
  EXPECT_NEAR(review.plain.inner_product.mean, 1.5052, 5e-5);
  EXPECT_NEAR(review.debiased.inner_product.mean, 1.7027, 5e-5);
}

// Haar is rotation invariant: one-hot inputs see exactly the theory
// (review: 0.116 and 1.001 at b = 2). 8 rotations of the 128 one-hot
// vectors: standard errors ~5e-4, so |z| <= 4 is a 2e-3-level check.
TEST(RotationStructureTest, OneHotUnderHaarMatchesTheory) {
  constexpr int kDim = 128, kSeeds = 8;
  const auto x = one_hot_vectors(kDim);
  for (int bits = 2; bits <= 4; ++bits) {
    const Measured haar = measure("haar", bits, kDim, x, kSeeds);
    EXPECT_LT(std::fabs(z_score(haar.plain.d_mse, beta_codebook(kDim, bits).d_mse())), kZ) << bits;
    EXPECT_LT(std::fabs(z_score(haar.debiased.inner_product, 1.0)), kZ) << bits;
    EXPECT_LT(std::fabs(z_score(haar.plain.inner_product, beta_codebook(kDim, bits).alpha)), kZ) << bits;
  }
}

// Two rounds make each coordinate of a one-hot input a sum of d random signs
// over d: close to Gaussian, but on a lattice of step 2/d (0.18 standard
// deviations at d = 128), so not exactly Haar. Measured over 64 rotations at
// d = 128 (standard errors 2-4% of D_mse, ~0.006 of the inner product):
// D_mse within 2-5% of theory, debiased <x̃,x> 0.987 / 1.036 / 0.990 at
// b = 2 / 3 / 4 against hadamard's 1.703 / 0.780 / 0.946. The tolerances
// below are those deviations plus four standard errors.
constexpr int kHadamard2Seeds = 64;
constexpr double kHadamard2OneHotDmseRelative = 0.2;
constexpr double kHadamard2OneHotDebias = 0.065;

TEST(RotationStructureTest, OneHotUnderTwoHadamardRoundsIsCloseToTheory) {
  constexpr int kDim = 128;
  const auto x = one_hot_vectors(kDim);
  for (int bits = 2; bits <= 4; ++bits) {
    const double theory = beta_codebook(kDim, bits).d_mse();
    const Measured two = measure("hadamard2", bits, kDim, x, kHadamard2Seeds);
    const Measured one = measure("hadamard", bits, kDim, x, 2);
    EXPECT_LT(std::fabs(two.plain.d_mse.mean / theory - 1), kHadamard2OneHotDmseRelative) << bits;
    EXPECT_LT(std::fabs(two.debiased.inner_product.mean - 1), kHadamard2OneHotDebias) << bits;
    // ... and closer than one round, by a wide margin.
    EXPECT_LT(std::fabs(two.debiased.inner_product.mean - 1), 0.5 * std::fabs(one.debiased.inner_product.mean - 1))
        << bits;
    EXPECT_LT(std::fabs(two.plain.d_mse.mean - theory), 0.5 * std::fabs(one.plain.d_mse.mean - theory)) << bits;
  }
}

// Outlier-heavy synthetic keys (tqlab synth defaults: 4 layers x 512 tokens,
// d = 128, all heads of a layer under one rotation), 16 rotations: debias is
// unbiased within 4 standard errors under haar and hadamard2; under one
// Hadamard round the bias is real (measured 1.019 / 1.012 / 1.0038 at
// b = 2 / 3 / 4, 9-38 standard errors).
TEST(RotationStructureSlowTest, SyntheticOutlierKeys) {
  SyntheticKvOptions options;
  options.kv_heads = 1;
  options.q_heads = 1;
  options.tokens = 512;
  const SyntheticKv kv = generate_synthetic_kv(options);
  std::vector<float> keys;
  for (const SyntheticTensor& tensor : kv.tensors) {
    if (tensor.name.ends_with(".k")) keys.insert(keys.end(), tensor.values.begin(), tensor.values.end());
  }
  for (int bits = 2; bits <= 4; ++bits) {
    for (const char* rotation : {"haar", "hadamard2"}) {
      const Measured measured = measure(rotation, bits, options.dim, keys, 16);
      EXPECT_LT(std::fabs(z_score(measured.debiased.inner_product, 1.0)), kZ) << rotation << " b=" << bits;
      EXPECT_LT(std::fabs(z_score(measured.plain.d_mse, beta_codebook(options.dim, bits).d_mse())), kZ)
          << rotation << " b=" << bits;
    }
    const Measured hadamard = measure("hadamard", bits, options.dim, keys, 16);
    EXPECT_GT(z_score(hadamard.debiased.inner_product, 1.0), kZ) << "b=" << bits << ": the bias must be visible";
  }
}

// Real keys (tinyllama_qkv, d = 64, the first sequence's 4 layers x 2 heads x
// 256 tokens under one rotation per seed), 16 rotations: all three rotations
// within 0.15% of unbiased; haar and hadamard2 within 4 standard errors.
TEST(RotationStructureSlowTest, RealKeys) {
  const std::string path = std::string(TQLAB_SHARED_DATA_DIR) + "/tinyllama_qkv.safetensors";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real dump absent: " << path;
  const auto file = TensorFile::open(path);
  KvDumpSpec spec;
  spec.layout = "seq head token dim";
  const KvDump dump(*file, spec);
  std::vector<float> keys;
  for (int layer = 0; layer < static_cast<int>(dump.layers().size()); ++layer) {
    const KvLayerShape& shape = dump.layers()[static_cast<std::size_t>(layer)];
    std::vector<float> head_keys(static_cast<std::size_t>(shape.tokens * shape.key_dim));
    for (int head = 0; head < shape.kv_heads; ++head) {
      dump.read_keys(layer, 0, head, head_keys.data());
      keys.insert(keys.end(), head_keys.begin(), head_keys.end());
    }
  }
  const int dim = dump.layers().front().key_dim;
  constexpr double kRealKeyBias = 0.0015;
  for (int bits = 2; bits <= 4; ++bits) {
    for (const char* rotation : {"haar", "hadamard", "hadamard2"}) {
      const Measured measured = measure(rotation, bits, dim, keys, 16);
      EXPECT_LT(std::fabs(measured.debiased.inner_product.mean - 1), kRealKeyBias) << rotation << " b=" << bits;
      if (std::string(rotation) != "hadamard") {
        EXPECT_LT(std::fabs(z_score(measured.debiased.inner_product, 1.0)), kZ) << rotation << " b=" << bits;
      }
    }
  }
}

}  // namespace
}  // namespace tqlab
