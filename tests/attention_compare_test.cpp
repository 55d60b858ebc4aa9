// The fast compare_query_attention (three fused passes, in every
// instruction-set form this CPU runs) against
// compare_query_attention_reference, bit for bit: every field of the result and
// every entry of P~. Rows of every length around the eight-key step, logit
// errors inside and across the expm1 range, past the log-sum-exp threshold and
// NaN, tied logits and tied quantized logits, runs of exact (zero-error) keys.
#include "metrics/attention_compare.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/kernel_set.h"
#include "core/rng.h"

namespace tqlab {
namespace {

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

struct Row {
  std::vector<double> logits, delta;
};

// Compares the fast form under every kernel set with the reference on one row.
void expect_same_as_reference(const Row& row, const std::string& what) {
  const int keys = static_cast<int>(row.logits.size());
  std::vector<double> p(row.logits.size()), want_p_tilde(p.size()), scratch(p.size());
  const int best = exact_softmax(keys, row.logits.data(), p.data());
  const QueryAttentionError want = compare_query_attention_reference(
      keys, row.logits.data(), p.data(), best, row.delta.data(), want_p_tilde.data(), scratch.data());
  for (KernelSet set : supported_kernel_sets()) {
    const ScopedKernelSet scoped(set);
    SCOPED_TRACE(what + ", kernels " + std::string(kernel_set_name(set)) + ", keys " + std::to_string(keys));
    std::vector<double> p_tilde(p.size(), -1.0);
    const QueryAttentionError got = compare_query_attention(keys, row.logits.data(), p.data(), best, row.delta.data(),
                                                            p_tilde.data(), scratch.data());
    EXPECT_EQ(bits(got.kl), bits(want.kl)) << got.kl << " vs " << want.kl;
    EXPECT_EQ(bits(got.cosine), bits(want.cosine)) << got.cosine << " vs " << want.cosine;
    EXPECT_EQ(bits(got.ip_bias), bits(want.ip_bias));
    EXPECT_EQ(bits(got.ip_mean_square), bits(want.ip_mean_square));
    EXPECT_EQ(got.top1, want.top1);
    EXPECT_EQ(got.top5, want.top5);
    int differing = 0;
    for (std::size_t j = 0; j < p.size(); ++j) differing += bits(p_tilde[j]) != bits(want_p_tilde[j]);
    EXPECT_EQ(differing, 0) << "entries of P~ differ";
  }
}

Row random_row(Rng& rng, int keys, double logit_scale, double error_scale) {
  Row row;
  for (int j = 0; j < keys; ++j) {
    row.logits.push_back(logit_scale * rng.gaussian());
    row.delta.push_back(error_scale * rng.gaussian());
  }
  return row;
}

TEST(CompareQueryAttentionFast, EqualsTheReferenceOnEveryRowLength) {
  Rng rng(7);
  for (int keys = 1; keys <= 70; ++keys) {
    expect_same_as_reference(random_row(rng, keys, 2.0, 0.05),
                             "small errors");  // every |delta| < 0.5
    expect_same_as_reference(random_row(rng, keys, 3.0, 0.6),
                             "mixed errors");  // both sides of 0.5
    expect_same_as_reference(random_row(rng, keys, 1.0, 8.0),
                             "large errors");  // mostly beyond 0.5
  }
  for (int keys : {255, 256, 257, 2048, 2051}) {
    expect_same_as_reference(random_row(rng, keys, 4.0, 0.02), "long row, small errors");
    expect_same_as_reference(random_row(rng, keys, 4.0, 1.5), "long row, mixed errors");
  }
}

TEST(CompareQueryAttentionFast, EqualsTheReferenceOnTheRarePaths) {
  Rng rng(11);
  for (int keys : {3, 8, 19, 64}) {
    Row huge = random_row(rng, keys, 1.0, 0.1);
    huge.delta[static_cast<std::size_t>(keys / 2)] = 800;  // beyond e^700: log-sum-exp
    expect_same_as_reference(huge, "an error beyond the exp range");
    Row underflow = random_row(rng, keys, 1.0, 0.1);
    underflow.delta[0] = -750;  // e^delta underflows to 0
    expect_same_as_reference(underflow, "an error below the exp range");
    Row edges = random_row(rng, keys, 1.0, 0.1);
    edges.delta[static_cast<std::size_t>(keys - 1)] = 0.5;  // exactly the expm1 range's edges
    edges.delta[static_cast<std::size_t>(keys / 3)] = -0.5;
    expect_same_as_reference(edges, "errors at the expm1 range's edges");
    Row zero_norm = random_row(rng, keys, 1.0, 0.0);  // no error at all: KL 0, cosine 1
    expect_same_as_reference(zero_norm, "no error");
  }
  // A NaN error: the fast form hands the row to the reference (NaN bits
  // included).
  Row nan = random_row(rng, 20, 1.0, 0.1);
  nan.delta[9] = std::numeric_limits<double>::quiet_NaN();
  expect_same_as_reference(nan, "a NaN error");
}

TEST(CompareQueryAttentionFast, EqualsTheReferenceOnTiesAndExactKeys) {
  Rng rng(13);
  for (int keys : {5, 16, 23, 40}) {
    // Every logit equal and no error: the arg-max is key 0 on both sides.
    expect_same_as_reference(Row{std::vector<double>(static_cast<std::size_t>(keys), 1.5),
                                 std::vector<double>(static_cast<std::size_t>(keys), 0.0)},
                             "all tied");
    // Ties among the quantized logits, on both sides of the exact arg-max and
    // in different lanes: logits on a coarse grid, errors on the same grid.
    Row grid;
    for (int j = 0; j < keys; ++j) {
      grid.logits.push_back(std::floor(4 * rng.uniform()));
      grid.delta.push_back(0.25 * std::floor(3 * rng.uniform()) - 0.25);
    }
    expect_same_as_reference(grid, "tied quantized logits");
    // Runs of exact keys (the sink and the window keep them: delta 0).
    Row exact = random_row(rng, keys, 2.0, 0.2);
    for (int j = 0; j < keys; j += 3) exact.delta[static_cast<std::size_t>(j)] = 0.0;
    expect_same_as_reference(exact, "runs of exact keys");
  }
}

// The block's conversions around a comparison, in every form, against their
// one-line definitions: rounding of the float product to double and of the
// double differences to float (ties, subnormals, values beyond float).
TEST(AttentionConversions, EveryKernelSetGivesTheDefinitionsBits) {
  Rng rng(17);
  for (int keys : {0, 1, 3, 7, 8, 9, 31, 64, 1000}) {
    std::vector<float> logit_errors;
    std::vector<double> p, p_tilde;
    for (int j = 0; j < keys; ++j) {
      logit_errors.push_back(static_cast<float>(rng.gaussian() * std::pow(10.0, 8 * rng.uniform() - 4)));
      p.push_back(rng.uniform());
      p_tilde.push_back(j % 5 == 0 ? p.back() + 1e-42 : rng.uniform() * (j % 7 == 0 ? 1e300 : 1.0));
    }
    const double scale = 0.08838834764831845;
    for (KernelSet set : supported_kernel_sets()) {
      const ScopedKernelSet scoped(set);
      SCOPED_TRACE(std::string(kernel_set_name(set)) + ", keys " + std::to_string(keys));
      std::vector<double> delta(static_cast<std::size_t>(keys), -1.0);
      std::vector<float> change(static_cast<std::size_t>(keys), -1.0f), kept(static_cast<std::size_t>(keys), -1.0f);
      scale_logit_errors(keys, scale, logit_errors.data(), delta.data());
      probability_changes(keys, p.data(), p_tilde.data(), change.data(), kept.data());
      int differing = 0;
      for (std::size_t j = 0; j < static_cast<std::size_t>(keys); ++j) {
        differing += bits(delta[j]) != bits(scale * static_cast<double>(logit_errors[j]));
        differing += std::bit_cast<std::uint32_t>(change[j]) !=
                     std::bit_cast<std::uint32_t>(static_cast<float>(p_tilde[j] - p[j]));
        differing +=
            std::bit_cast<std::uint32_t>(kept[j]) != std::bit_cast<std::uint32_t>(static_cast<float>(p_tilde[j]));
      }
      EXPECT_EQ(differing, 0);
    }
  }
}

}  // namespace
}  // namespace tqlab
