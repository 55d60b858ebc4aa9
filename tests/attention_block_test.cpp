// AttentionBlock (sgemm, logit errors from key errors, one exact pass shared by
// comparisons) against attention_reference (per query, from the definitions).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "metrics/attention_block.h"
#include "metrics/attention_reference.h"

namespace tqlab {
namespace {

std::vector<float> gaussian(std::size_t n, double sigma, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> out(n);
  for (float& value : out) value = static_cast<float>(sigma * rng.gaussian());
  return out;
}

// The block's logit errors come from float sgemm (the reference's logits are all
// double): its results carry float rounding, about 1e-7 relative per logit error.
constexpr double kRelativeTolerance = 1e-5;
constexpr double kCosineTolerance = 1e-7;

struct Case {
  std::string name;
  int tokens, chunk, rows_per_block;
  bool causal;
  ExactTokens exact;
  double query_scale = 1.5;  // sigma of the queries
  double key_error = 0.1;    // sigma of k~ - k
};

class AttentionBlockTest : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionBlockTest, MatchesTheReferenceQueryByQuery) {
  const Case& c = GetParam();
  const int key_dim = 8, value_dim = 6;
  const auto n = static_cast<std::size_t>(c.tokens);
  const std::vector<float> q = gaussian(n * key_dim, c.query_scale, 1);
  const std::vector<float> k = gaussian(n * key_dim, 1.0, 2);
  const std::vector<float> v = gaussian(n * value_dim, 1.0, 3);
  const std::vector<float> dk = gaussian(n * key_dim, c.key_error, 4);
  const std::vector<float> dv = gaussian(n * value_dim, 0.2, 5);
  std::vector<float> k_quantized(k), v_quantized(v);
  for (std::size_t i = 0; i < k.size(); ++i) k_quantized[i] = k[i] + dk[i];
  for (std::size_t i = 0; i < v.size(); ++i) v_quantized[i] = v[i] + dv[i];
  // The block sees the errors as the sweep computes them: quantized minus exact, in float.
  std::vector<float> key_error(k.size()), value_error(v.size());
  for (std::size_t i = 0; i < k.size(); ++i) key_error[i] = k_quantized[i] - k[i];
  for (std::size_t i = 0; i < v.size(); ++i) value_error[i] = v_quantized[i] - v[i];
  const double scale = 1.0 / std::sqrt(key_dim);

  AttentionReferenceInput input{c.tokens, key_dim, value_dim, q.data(), k.data(), k_quantized.data(), v.data(),
                                v_quantized.data(), c.chunk, c.causal, scale, c.exact};
  const std::vector<ReferenceQueryResult> reference = attention_reference(input);
  ASSERT_EQ(reference.size(), n);

  // Logit errors carry the float rounding of q (k~ - k), relative to the logits' size.
  const double cosine_tolerance = kCosineTolerance * std::max(1.0, c.query_scale * c.key_error * 10);
  AttentionBlock block;
  int checked = 0;
  for (const ChunkGeometry& chunk : split_chunks(c.tokens, c.chunk)) {
    for (int first = 0; first < chunk.tokens; first += c.rows_per_block) {
      const int rows = std::min(c.rows_per_block, chunk.tokens - first);
      const std::size_t base = static_cast<std::size_t>(chunk.start);
      block.set_exact(chunk, first, rows, c.causal, scale, key_dim, value_dim,
                      q.data() + (base + first) * key_dim, k.data() + base * key_dim, v.data() + base * value_dim);
      block.set_key_error(key_error.data() + base * key_dim);
      block.compare(c.exact, value_error.data() + base * value_dim,
                    [&](int row, const QueryAttentionError& error, std::optional<double> output_error) {
                      const ReferenceQueryResult& want = reference[base + first + row];
                      SCOPED_TRACE("token " + std::to_string(want.token));
                      EXPECT_NEAR(error.kl, want.error.kl, kRelativeTolerance * want.error.kl + 1e-15);
                      EXPECT_EQ(error.top1, want.error.top1);
                      EXPECT_EQ(error.top5, want.error.top5);
                      EXPECT_NEAR(error.cosine, want.error.cosine, cosine_tolerance);
                      // A mean of errors of both signs: its float rounding is relative to their size.
                      EXPECT_NEAR(error.ip_bias, want.error.ip_bias,
                                  kRelativeTolerance * std::sqrt(want.error.ip_mean_square));
                      EXPECT_NEAR(error.ip_mean_square, want.error.ip_mean_square,
                                  kRelativeTolerance * want.error.ip_mean_square + 1e-15);
                      ASSERT_EQ(output_error.has_value(), want.output_error.has_value());
                      if (output_error) {
                        EXPECT_NEAR(*output_error, *want.output_error, kRelativeTolerance * *want.output_error + 1e-12);
                      }
                      ++checked;
                    });
    }
  }
  EXPECT_EQ(checked, c.tokens);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionBlockTest,
    ::testing::Values(Case{"causal_one_chunk", 23, 64, 7, true, {}},
                      Case{"causal_chunks_that_do_not_divide", 37, 16, 5, true, {}},
                      Case{"bidirectional_chunks", 37, 16, 6, false, {}},
                      Case{"causal_recent_window_and_sink", 41, 16, 4, true, {3, 5, WindowMode::recent}},
                      Case{"causal_tail_window", 41, 16, 16, true, {0, 6, WindowMode::tail}},
                      Case{"bidirectional_recent_window_sink", 30, 32, 8, false, {2, 4, WindowMode::recent}},
                      Case{"bidirectional_tail_window_sink_beyond_chunk", 30, 8, 3, false, {10, 3, WindowMode::tail}},
                      Case{"window_longer_than_chunk", 20, 8, 8, true, {0, 50, WindowMode::recent}},
                      // Logit errors of tens of nats: the keys holding P's mass lose nearly all of it.
                      Case{"large_errors", 40, 40, 40, true, {}, 12.0, 3.0},
                      Case{"large_errors_bidirectional", 33, 16, 9, false, {2, 3, WindowMode::tail}, 12.0, 3.0}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace tqlab

namespace tqlab {
namespace {

// One query from the definition, in long double: KL, P~ and the arg-maxes.
QueryAttentionError direct(const std::vector<double>& logits, const std::vector<double>& delta) {
  const auto n = logits.size();
  long double top = -INFINITY, quantized_top = -INFINITY;
  for (std::size_t j = 0; j < n; ++j) {
    top = std::max<long double>(top, logits[j]);
    quantized_top = std::max<long double>(quantized_top, logits[j] + delta[j]);
  }
  long double z = 0, zq = 0;
  for (std::size_t j = 0; j < n; ++j) {
    z += std::exp(static_cast<long double>(logits[j]) - top);
    zq += std::exp(static_cast<long double>(logits[j]) + delta[j] - quantized_top);
  }
  QueryAttentionError error;
  long double kl = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const long double log_p = logits[j] - top - std::log(z);
    const long double log_q = logits[j] + delta[j] - quantized_top - std::log(zq);
    kl += std::exp(log_p) * (log_p - log_q);
  }
  error.kl = static_cast<double>(kl);
  return error;
}

TEST(CompareQueryAttention, KlWhenTheDominantKeysLoseNearlyAllTheirMass) {
  // Key 0 holds almost all of P; its quantized logit falls by 40 and key 5's rises by 30:
  // sum p expm1(delta) is -1 + 1e-13, where 1 + that cancels.
  std::vector<double> logits{20, 0, 1, -3, 2, -380, 4, 0.5};
  std::vector<double> delta{-40, 0.1, -0.2, 0.3, 0, 30, -1, 2};
  std::vector<double> p(logits.size()), p_tilde(logits.size()), scratch(logits.size());
  const int best = exact_softmax(static_cast<int>(logits.size()), logits.data(), p.data());
  const QueryAttentionError error = compare_query_attention(static_cast<int>(logits.size()), logits.data(), p.data(),
                                                            best, delta.data(), p_tilde.data(), scratch.data());
  const QueryAttentionError want = direct(logits, delta);
  EXPECT_NEAR(error.kl, want.kl, 1e-12 * want.kl);
  EXPECT_GT(error.kl, 10);
  double sum = 0;
  for (double value : p_tilde) {
    EXPECT_TRUE(std::isfinite(value));
    sum += value;
  }
  EXPECT_NEAR(sum, 1.0, 1e-14);
  EXPECT_FALSE(error.top1);
  EXPECT_TRUE(std::isfinite(error.cosine));
}

TEST(CompareQueryAttention, TinyKlKeepsItsDigits) {
  std::vector<double> logits{3, 1, -2, 0.5, 2.5};
  std::vector<double> delta{1e-7, -2e-7, 3e-7, 0, -1e-7};
  std::vector<double> p(logits.size()), p_tilde(logits.size()), scratch(logits.size());
  const int best = exact_softmax(5, logits.data(), p.data());
  const QueryAttentionError error =
      compare_query_attention(5, logits.data(), p.data(), best, delta.data(), p_tilde.data(), scratch.data());
  // KL ~ Var_P(delta) / 2 for small delta.
  double mean = 0, square = 0;
  for (int j = 0; j < 5; ++j) {
    mean += p[j] * delta[j];
    square += p[j] * delta[j] * delta[j];
  }
  const double second_order = 0.5 * (square - mean * mean);
  EXPECT_NEAR(error.kl, second_order, 1e-6 * second_order);
}

TEST(CompareQueryAttention, HugeLogitErrorsTakeTheLogSumExpPath) {
  std::vector<double> logits{0, 1, 2};
  std::vector<double> delta{800, 0, -5};
  std::vector<double> p(3), p_tilde(3), scratch(3);
  const int best = exact_softmax(3, logits.data(), p.data());
  const QueryAttentionError error =
      compare_query_attention(3, logits.data(), p.data(), best, delta.data(), p_tilde.data(), scratch.data());
  EXPECT_NEAR(error.kl, direct(logits, delta).kl, 1e-9 * error.kl);
  EXPECT_NEAR(p_tilde[0], 1.0, 1e-12);
}

}  // namespace
}  // namespace tqlab
