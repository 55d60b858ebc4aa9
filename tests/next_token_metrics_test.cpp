// The end-to-end statistics against hand-derived values and llama.cpp's own
// formulas (perplexity.cpp: mean_and_uncertainty, covariance, the ln-ratio
// uncertainty, RMS dp, same top p).
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "metrics/next_token_metrics.h"

namespace tqlab {
namespace {

std::map<std::string, ValueAndError> by_name(const NextTokenSeries& series) {
  std::map<std::string, ValueAndError> out;
  for (const auto& [name, estimate] : next_token_metrics(series)) out[name] = estimate;
  return out;
}

TEST(NextTokenComparisonTest, TwoTokenVocabularyByHand) {
  // p = (1/2, 1/2), p~ = (3/4, 1/4): KL = (ln(2/3) + ln 2) / 2 = ln(4/3) / 2.
  const float base[] = {0.0f, 0.0f};
  const float run[] = {static_cast<float>(std::log(3.0)), 0.0f};
  std::vector<double> scratch;
  const NextTokenComparison token = compare_next_token(2, base, run, 1, scratch);
  EXPECT_NEAR(token.kld, std::log(4.0 / 3.0) / 2, 1e-7);
  EXPECT_NEAR(token.nll_base, std::log(2.0), 1e-12);
  EXPECT_NEAR(token.nll, std::log(4.0), 1e-7);
  EXPECT_NEAR(token.p_base, 0.5, 1e-12);
  EXPECT_NEAR(token.p, 0.25, 1e-7);
  EXPECT_TRUE(token.same_top1);  // the base's tie goes to its first maximum, token 0: the run's too
  const float other[] = {0.0f, static_cast<float>(std::log(3.0))};
  EXPECT_FALSE(compare_next_token(2, base, other, 1, scratch).same_top1);
}

TEST(NextTokenComparisonTest, IdenticalAndShiftedLogitsHaveNoDivergence) {
  Rng rng(3);
  std::vector<float> base(5000), shifted(5000);
  for (std::size_t v = 0; v < base.size(); ++v) {
    base[v] = static_cast<float>(3 * rng.gaussian());
    shifted[v] = base[v] + 4.0f;  // every logit moved alike (up to float rounding): the same distribution
  }
  std::vector<double> scratch;
  const NextTokenComparison same = compare_next_token(5000, base.data(), base.data(), 17, scratch);
  EXPECT_EQ(same.kld, 0.0);
  EXPECT_EQ(same.nll, same.nll_base);
  EXPECT_TRUE(same.same_top1);
  const NextTokenComparison shift = compare_next_token(5000, base.data(), shifted.data(), 17, scratch);
  EXPECT_NEAR(shift.kld, 0.0, 1e-6);
  EXPECT_NEAR(shift.nll, shift.nll_base, 1e-5);
}

TEST(NextTokenComparisonTest, MatchesTheDefinitionInLongDouble) {
  Rng rng(4);
  const int vocab = 3000;
  std::vector<float> base(vocab), run(vocab);
  for (int v = 0; v < vocab; ++v) {
    base[static_cast<std::size_t>(v)] = static_cast<float>(2 * rng.gaussian());
    run[static_cast<std::size_t>(v)] = base[static_cast<std::size_t>(v)] + static_cast<float>(0.3 * rng.gaussian());
  }
  long double zb = 0, zq = 0;
  for (int v = 0; v < vocab; ++v) {
    zb += std::exp(static_cast<long double>(base[static_cast<std::size_t>(v)]));
    zq += std::exp(static_cast<long double>(run[static_cast<std::size_t>(v)]));
  }
  long double kl = 0;
  for (int v = 0; v < vocab; ++v) {
    const long double p = std::exp(static_cast<long double>(base[static_cast<std::size_t>(v)])) / zb;
    const long double q = std::exp(static_cast<long double>(run[static_cast<std::size_t>(v)])) / zq;
    kl += p * std::log(p / q);
  }
  std::vector<double> scratch;
  const NextTokenComparison token = compare_next_token(vocab, base.data(), run.data(), 42, scratch);
  EXPECT_NEAR(token.kld, static_cast<double>(kl), 1e-12 + 1e-10 * static_cast<double>(kl));
  EXPECT_NEAR(token.nll, static_cast<double>(std::log(zq) - run[42]), 1e-12);
  const NextTokenDistribution alone = next_token_distribution(vocab, base.data(), 42, scratch);
  EXPECT_EQ(alone.nll, token.nll_base);  // the base pass and every run compute one number
  const float nan[] = {0.0f, std::nanf("")};
  EXPECT_FALSE(compare_next_token(2, base.data(), nan, 0, scratch).finite);
}

// llama.cpp's mean_and_uncertainty and covariance, as perplexity.cpp writes them.
std::pair<double, double> llama_mean_and_uncertainty(double sum, double sum2, std::size_t count) {
  double f = sum / count;
  double df = sum2 / count - f * f;
  df = df > 0 && count > 10 ? std::sqrt(df / (count - 1)) : 0.;
  return {f, df};
}
double llama_covariance(double suma, double sumb, double sumab, std::size_t count) {
  return (sumab / count - (suma / count) * (sumb / count)) / (count - 1);
}

TEST(NextTokenMetricsTest, FollowsLlamaCppFormulas) {
  Rng rng(5);
  NextTokenSeries series;
  double sum = 0, sum2 = 0, sum_base = 0, sum_base2 = 0, sum_cross = 0, sum_kld = 0, sum_kld2 = 0, sum_dp = 0,
         sum_dp2 = 0, sum_dp4 = 0, same = 0;
  const int n = 500;
  for (int i = 0; i < n; ++i) {
    NextTokenComparison token;
    token.nll_base = 1.5 + rng.gaussian();
    token.nll = token.nll_base + 0.05 + 0.2 * rng.gaussian();
    token.kld = 0.01 * std::abs(rng.gaussian());
    token.p_base = rng.uniform();
    token.p = std::clamp(token.p_base + 0.05 * rng.gaussian(), 0.0, 1.0);
    token.same_top1 = rng.uniform() < 0.9;
    series.add(token);
    sum += token.nll, sum2 += token.nll * token.nll;
    sum_base += token.nll_base, sum_base2 += token.nll_base * token.nll_base, sum_cross += token.nll * token.nll_base;
    sum_kld += token.kld, sum_kld2 += token.kld * token.kld;
    const double dp = token.p - token.p_base;
    sum_dp += dp, sum_dp2 += dp * dp, sum_dp4 += dp * dp * dp * dp;
    same += token.same_top1;
  }
  const auto m = by_name(series);
  const auto [log_ppl, log_ppl_se] = llama_mean_and_uncertainty(sum, sum2, n);
  EXPECT_NEAR(m.at("e2e_ppl").value, std::exp(log_ppl), 1e-12);
  EXPECT_NEAR(*m.at("e2e_ppl").standard_error, std::exp(log_ppl) * log_ppl_se, 1e-10);
  const auto [log_base, log_base_se] = llama_mean_and_uncertainty(sum_base, sum_base2, n);
  const double cov = llama_covariance(sum, sum_base, sum_cross, n);
  const double ratio_se = std::sqrt(log_ppl_se * log_ppl_se + log_base_se * log_base_se - 2 * cov);
  EXPECT_NEAR(m.at("e2e_ln_ppl_ratio").value, log_ppl - log_base, 1e-12);
  EXPECT_NEAR(*m.at("e2e_ln_ppl_ratio").standard_error, ratio_se, 1e-9);  // paired differences: the same quantity
  EXPECT_NEAR(m.at("e2e_ppl_delta_pct").value, 100 * (std::exp(log_ppl - log_base) - 1), 1e-9);
  EXPECT_NEAR(*m.at("e2e_ppl_delta_pct").standard_error, 100 * std::exp(log_ppl - log_base) * ratio_se, 1e-7);
  const auto [kld, kld_se] = llama_mean_and_uncertainty(sum_kld, sum_kld2, n);
  EXPECT_NEAR(m.at("e2e_kld").value, kld, 1e-15);
  EXPECT_NEAR(*m.at("e2e_kld").standard_error, kld_se, 1e-12);
  const auto [dp, dp_se] = llama_mean_and_uncertainty(sum_dp, sum_dp2, n);
  EXPECT_NEAR(m.at("e2e_dp").value, dp, 1e-15);
  EXPECT_NEAR(*m.at("e2e_dp").standard_error, dp_se, 1e-12);
  const auto [dp_mse, dp_mse_se] = llama_mean_and_uncertainty(sum_dp2, sum_dp4, n);
  EXPECT_NEAR(m.at("e2e_dp_rms").value, std::sqrt(dp_mse), 1e-12);
  EXPECT_NEAR(*m.at("e2e_dp_rms").standard_error, 0.5 / std::sqrt(dp_mse) * dp_mse_se, 1e-10);
  const double top = same / n;
  EXPECT_NEAR(m.at("e2e_top1").value, top, 1e-15);
  EXPECT_NEAR(*m.at("e2e_top1").standard_error, std::sqrt(top * (1 - top) / (n - 1)), 1e-12);
}

TEST(NextTokenMetricsTest, PercentilesInterpolateLinearlyAndSmallSamplesHaveNoError) {
  NextTokenSeries series;
  for (int i = 100; i >= 1; --i) {  // any order
    NextTokenComparison token;
    token.kld = i;
    series.add(token);
  }
  const auto m = by_name(series);
  EXPECT_DOUBLE_EQ(m.at("e2e_kld_max").value, 100);
  EXPECT_DOUBLE_EQ(m.at("e2e_kld_median").value, 50.5);  // the mean of the middle two
  EXPECT_NEAR(m.at("e2e_kld_p99").value, 99.01, 1e-12);   // 1 + 0.99 * 99
  EXPECT_NEAR(m.at("e2e_kld_p95").value, 95.05, 1e-12);
  EXPECT_FALSE(m.at("e2e_kld_p99").standard_error);

  NextTokenSeries few;
  for (int i = 0; i < 10; ++i) few.add({1.0, 1.0 + i, 0.1, 0.5, 0.4, true, true});
  EXPECT_FALSE(by_name(few).at("e2e_ppl").standard_error);  // llama.cpp: none for 10 values or fewer
  few.add({1.0, 2.0, 0.1, 0.5, 0.4, true, true});
  EXPECT_TRUE(by_name(few).at("e2e_ppl").standard_error);
}

TEST(NextTokenMetricsTest, SeedAverageIsTokenByToken) {
  NextTokenSeries a, b;
  a.add({1.0, 2.0, 0.5, 0.2, 0.1, true, true});
  b.add({1.0, 4.0, 1.5, 0.2, 0.3, false, true});
  const NextTokenSeries mean = average_series({a, b});
  EXPECT_EQ(mean.nll, std::vector<double>{3.0});
  EXPECT_EQ(mean.kld, std::vector<double>{1.0});
  EXPECT_EQ(mean.same_top1, std::vector<double>{0.5});
  EXPECT_EQ(mean.nll_base, std::vector<double>{1.0});
}

}  // namespace
}  // namespace tqlab
