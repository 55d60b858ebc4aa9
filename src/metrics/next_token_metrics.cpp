#include "metrics/next_token_metrics.h"

#include <algorithm>
#include <cmath>

#include "core/exp_kernels.h"
#include "metrics/quantile.h"

namespace tqlab {
namespace {

// e[v] = e^(z(v) - max z) into `e`; returns the sum, the max and the first argmax; finite = every z finite.
struct Exponentials {
  double sum = 0;
  float largest = 0;
  int argmax = 0;
  bool finite = true;
};

Exponentials exponentials(int vocab, const float* z, double* e) {
  Exponentials out;
  out.largest = z[0];
  for (int v = 0; v < vocab; ++v) {
    out.finite &= std::isfinite(z[v]);
    if (z[v] > out.largest) {
      out.largest = z[v];
      out.argmax = v;
    }
  }
  if (!out.finite) return out;
  for (int v = 0; v < vocab; ++v) e[v] = static_cast<double>(z[v]) - out.largest;
  exp_array(vocab, e, e);
  for (int v = 0; v < vocab; ++v) out.sum += e[v];
  return out;
}

std::optional<double> standard_error_of_mean(const std::vector<double>& values, double mean) {
  const std::size_t n = values.size();
  if (n <= 10) return std::nullopt;  // llama.cpp gives no uncertainty for so few values
  double squares = 0;
  for (double value : values) squares += (value - mean) * (value - mean);
  return std::sqrt(squares / static_cast<double>(n) / static_cast<double>(n - 1));
}

std::optional<double> scaled(const std::optional<double>& value, double factor) {
  return value ? std::optional<double>(*value * factor) : std::nullopt;
}

}  // namespace

NextTokenDistribution next_token_distribution(int vocab, const float* logits, int next, std::vector<double>& scratch) {
  scratch.resize(static_cast<std::size_t>(vocab));
  const Exponentials e = exponentials(vocab, logits, scratch.data());
  NextTokenDistribution out;
  out.finite = e.finite;
  out.argmax = e.argmax;
  if (!e.finite) return out;
  out.log_normalizer = e.largest + std::log(e.sum);
  out.nll = out.log_normalizer - logits[next];
  return out;
}

NextTokenComparison compare_next_token(int vocab, const float* base_logits, const float* logits, int next,
                                       std::vector<double>& scratch) {
  scratch.resize(2 * static_cast<std::size_t>(vocab));
  double* e_base = scratch.data();
  double* e_run = scratch.data() + vocab;
  const Exponentials base = exponentials(vocab, base_logits, e_base);
  const Exponentials run = exponentials(vocab, logits, e_run);
  NextTokenComparison out;
  out.finite = base.finite && run.finite;
  if (!out.finite) return out;
  const double log_base = base.largest + std::log(base.sum);
  const double log_run = run.largest + std::log(run.sum);
  // KL = sum_v p(v) (z(v) - z~(v)) - (log_base - log_run): the log-normalizers leave the sum,
  // so a run that shifts every logit alike has KL 0 up to rounding.
  double weighted = 0;
  for (int v = 0; v < vocab; ++v) weighted += e_base[v] * (static_cast<double>(base_logits[v]) - logits[v]);
  out.kld = weighted / base.sum - (log_base - log_run);
  out.nll_base = log_base - base_logits[next];
  out.nll = log_run - logits[next];
  out.p_base = e_base[next] / base.sum;
  out.p = e_run[next] / run.sum;
  out.same_top1 = base.argmax == run.argmax;
  return out;
}

void NextTokenSeries::add(const NextTokenComparison& token) {
  nll_base.push_back(token.nll_base);
  nll.push_back(token.nll);
  kld.push_back(token.kld);
  p_base.push_back(token.p_base);
  p.push_back(token.p);
  same_top1.push_back(token.same_top1 ? 1.0 : 0.0);
}

ValueAndError mean_estimate(const std::vector<double>& values) {
  ValueAndError out;
  if (values.empty()) return out;
  double sum = 0;
  for (double value : values) sum += value;
  out.value = sum / static_cast<double>(values.size());
  out.standard_error = standard_error_of_mean(values, out.value);
  return out;
}

ValueAndError perplexity(const std::vector<double>& nll) {
  const ValueAndError mean = mean_estimate(nll);
  const double ppl = std::exp(mean.value);
  return {ppl, scaled(mean.standard_error, ppl)};
}

const std::vector<std::string>& next_token_metric_names() {
  static const std::vector<std::string> names{
      "e2e_ppl",      "e2e_ppl_delta_pct", "e2e_ln_ppl_ratio", "e2e_kld", "e2e_kld_p99", "e2e_kld_p95",
      "e2e_kld_median", "e2e_kld_max",     "e2e_top1",         "e2e_dp",  "e2e_dp_rms"};
  return names;
}

std::vector<std::pair<std::string, ValueAndError>> next_token_metrics(const NextTokenSeries& series) {
  const std::size_t n = series.size();
  std::vector<double> difference(n), dp(n), dp_squared(n);
  for (std::size_t i = 0; i < n; ++i) {
    difference[i] = series.nll[i] - series.nll_base[i];
    dp[i] = series.p[i] - series.p_base[i];
    dp_squared[i] = dp[i] * dp[i];
  }
  const ValueAndError ln_ratio = mean_estimate(difference);
  const double ratio = std::exp(ln_ratio.value);
  const ValueAndError mean_square = mean_estimate(dp_squared);
  const double rms = std::sqrt(mean_square.value);
  std::vector<double> kld = series.kld;
  const auto percentile = [&](double q) { return ValueAndError{quantile(kld, q).value_or(0.0), std::nullopt}; };
  const ValueAndError p99 = percentile(0.99), p95 = percentile(0.95), median = percentile(0.5);
  const double largest = kld.empty() ? 0.0 : *std::max_element(kld.begin(), kld.end());
  return {{"e2e_ppl", perplexity(series.nll)},
          {"e2e_ppl_delta_pct", {100 * (ratio - 1), scaled(ln_ratio.standard_error, 100 * ratio)}},
          {"e2e_ln_ppl_ratio", ln_ratio},
          {"e2e_kld", mean_estimate(series.kld)},
          {"e2e_kld_p99", p99},
          {"e2e_kld_p95", p95},
          {"e2e_kld_median", median},
          {"e2e_kld_max", {largest, std::nullopt}},
          {"e2e_top1", mean_estimate(series.same_top1)},
          {"e2e_dp", mean_estimate(dp)},
          {"e2e_dp_rms", {rms, rms > 0 ? scaled(mean_square.standard_error, 0.5 / rms) : std::nullopt}}};
}

NextTokenSeries average_series(const std::vector<NextTokenSeries>& seeds) {
  NextTokenSeries out;
  if (seeds.empty()) return out;
  const std::size_t n = seeds.front().size();
  const double count = static_cast<double>(seeds.size());
  const auto average = [&](std::vector<double> NextTokenSeries::*column) {
    std::vector<double> values(n, 0.0);
    for (const NextTokenSeries& seed : seeds) {
      for (std::size_t i = 0; i < n; ++i) values[i] += (seed.*column)[i];
    }
    for (double& value : values) value /= count;
    return values;
  };
  out.nll_base = average(&NextTokenSeries::nll_base);
  out.nll = average(&NextTokenSeries::nll);
  out.kld = average(&NextTokenSeries::kld);
  out.p_base = average(&NextTokenSeries::p_base);
  out.p = average(&NextTokenSeries::p);
  out.same_top1 = average(&NextTokenSeries::same_top1);
  return out;
}

}  // namespace tqlab
