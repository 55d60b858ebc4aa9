// tqlab synth's data: finite in every stored type, deterministic, and with
// the structure it promises (peaked causal attention at any context length).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/error.h"
#include "kv/synthetic_kv.h"

namespace tqlab {
namespace {

// Mean over queries t >= 1 of the largest causal softmax weight, for q head 0 of layer `layer`.
double mean_top1_weight(const SyntheticKv& kv, const SyntheticKvOptions& options, int layer) {
  const auto& q = kv.tensors[static_cast<std::size_t>(3 * layer)].values;
  const auto& k = kv.tensors[static_cast<std::size_t>(3 * layer + 1)].values;
  const int d = options.dim;
  double total = 0;
  for (int t = 1; t < options.tokens; ++t) {
    std::vector<double> logits(static_cast<std::size_t>(t + 1));
    double best = -INFINITY;
    for (int j = 0; j <= t; ++j) {
      double dot = 0;
      for (int c = 0; c < d; ++c)
        dot += static_cast<double>(q[static_cast<std::size_t>(t * d + c)]) * k[static_cast<std::size_t>(j * d + c)];
      logits[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
      best = std::max(best, logits[static_cast<std::size_t>(j)]);
    }
    double mass = 0;
    for (double logit : logits) mass += std::exp(logit - best);
    total += 1.0 / mass;
  }
  return total / (options.tokens - 1);
}

TEST(SyntheticKvTest, ValuesFitInHalfPrecisionForManySeeds) {
  for (int dim : {8, 64}) {
    for (std::uint64_t seed = 0; seed < 6; ++seed) {
      SyntheticKvOptions options;
      options.layers = 2;
      options.kv_heads = 2;
      options.q_heads = 4;
      options.tokens = 256;
      options.seqs = 2;
      options.dim = dim;
      options.seed = seed;
      for (const SyntheticTensor& tensor : generate_synthetic_kv(options).tensors) {
        for (float value : tensor.values) {
          ASSERT_TRUE(std::isfinite(half_to_float(float_to_half(value)))) << tensor.name << " seed " << seed;
        }
      }
    }
  }
}

TEST(SyntheticKvTest, AttentionStaysPeakedAsTheContextGrows) {
  for (int tokens : {128, 1024}) {
    SyntheticKvOptions options;
    options.layers = 1;
    options.kv_heads = 1;
    options.q_heads = 1;
    options.tokens = tokens;
    options.dim = 64;
    const SyntheticKv kv = generate_synthetic_kv(options);
    // Uniform attention would give about log(tokens)/tokens; the recipe aims each query's target at 30-90%.
    EXPECT_GT(mean_top1_weight(kv, options, 0), 0.35) << tokens << " tokens";
  }
}

TEST(SyntheticKvTest, DeterministicForASeed) {
  SyntheticKvOptions options;
  options.layers = 1;
  options.tokens = 64;
  options.dim = 16;
  const SyntheticKv a = generate_synthetic_kv(options);
  const SyntheticKv b = generate_synthetic_kv(options);
  ASSERT_EQ(a.tensors.size(), 3u);
  for (std::size_t i = 0; i < a.tensors.size(); ++i) EXPECT_EQ(a.tensors[i].values, b.tensors[i].values);
  EXPECT_EQ(a.layout, "head token dim");
}

TEST(SyntheticKvTest, RejectsImpossibleOptions) {
  SyntheticKvOptions odd;
  odd.dim = 7;
  EXPECT_THROW(generate_synthetic_kv(odd), InputError);
  SyntheticKvOptions groups;
  groups.kv_heads = 3;
  groups.q_heads = 4;
  EXPECT_THROW(generate_synthetic_kv(groups), InputError);
}

}  // namespace
}  // namespace tqlab
