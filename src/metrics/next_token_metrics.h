// End-to-end statistics of a model's next-token predictions: a run (a
// quantized KV cache) against the base (the exact cache), token by token, then
// summarized with llama.cpp's formulas (tools/perplexity/perplexity.cpp:
// perplexity and --kl-divergence), in double throughout.
//
// Per scored token, with base logits z and run logits z~ (vocab floats each),
// p = softmax(z), p~ = softmax(z~), and the token that actually follows, n:
//   nll_base = -log p(n),   nll = -log p~(n)
//   kld      = KL(p || p~) = sum_v p(v) (log p(v) - log p~(v))   (the whole vocabulary)
//   same_top1 = argmax z == argmax z~   (the first maximum on ties)
//   p_base = p(n), p = p~(n)
// Summaries over the N scored tokens (mean_and_uncertainty of llama.cpp: the
// mean, and sqrt(var / (N - 1)) with var the mean squared deviation, as its
// standard error; no standard error for N <= 10, as llama.cpp gives none):
//   e2e_ppl             exp(mean nll), se = PPL * se(nll)
//   e2e_ppl_delta_pct   100 (PPL / PPL_base - 1) = 100 (exp(mean d) - 1), d = nll - nll_base,
//                       se = 100 exp(mean d) se(d): from the paired differences, which
//                       is llama.cpp's ln-ratio uncertainty sqrt(se^2 + se_base^2 - 2 cov)
//   e2e_ln_ppl_ratio    mean d = ln(PPL / PPL_base), se(d)
//   e2e_kld             mean kld, se
//   e2e_kld_p99, e2e_kld_p95, e2e_kld_median, e2e_kld_max   percentiles (linear interpolation,
//                       numpy's and llama.cpp's rule; the median of an even count is the mean
//                       of the middle two), no se
//   e2e_top1            mean same_top1, se = sqrt(f (1 - f) / (N - 1)) (binomial, llama.cpp's "same top p")
//   e2e_dp              mean (p - p_base), se
//   e2e_dp_rms          sqrt(mean (p - p_base)^2), se = se((p - p_base)^2) / (2 rms) (llama.cpp's RMS dp)
// Where llama.cpp differs: it stores the base's log-probabilities in 16 bits and
// drops vocabulary entries below e^-16 from the KL sum; here both distributions
// are exact float32 logits and every entry counts.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tqlab {

/// One distribution's facts about its next token.
struct NextTokenDistribution {
  double log_normalizer = 0;  ///< log sum_v e^z(v)
  int argmax = 0;             ///< the first largest logit
  double nll = 0;             ///< log_normalizer - z(next)
  bool finite = true;         ///< every logit finite
};

/// logits: vocab floats; next < vocab.
NextTokenDistribution next_token_distribution(int vocab, const float* logits, int next, std::vector<double>& scratch);

/// One scored token of a run against the base.
struct NextTokenComparison {
  double nll_base = 0, nll = 0;
  double kld = 0;
  double p_base = 0, p = 0;
  bool same_top1 = false;
  bool finite = true;  ///< every logit of both finite (else the rest is meaningless)
};

/// base_logits, logits: vocab floats each. scratch: reused (2 * vocab doubles).
NextTokenComparison compare_next_token(int vocab, const float* base_logits, const float* logits, int next,
                                       std::vector<double>& scratch);

/// The per-token values of a run's scored tokens, in scoring order.
struct NextTokenSeries {
  std::vector<double> nll_base, nll, kld, p_base, p, same_top1;  ///< same_top1: 1 or 0

  void add(const NextTokenComparison& token);
  std::size_t size() const { return nll.size(); }
};

/// A number with its standard error (none where no formula gives one).
struct ValueAndError {
  double value = 0;
  std::optional<double> standard_error;
};

/// Mean and llama.cpp's standard error of `values`.
ValueAndError mean_estimate(const std::vector<double>& values);

/// exp(mean nll) and PPL * se(nll): perplexity from negative log-likelihoods.
ValueAndError perplexity(const std::vector<double>& nll);

/// The metrics above, in that order, named as results record them.
std::vector<std::pair<std::string, ValueAndError>> next_token_metrics(const NextTokenSeries& series);

/// The names next_token_metrics returns, in its order.
const std::vector<std::string>& next_token_metric_names();

/// Token by token, the mean of several seeds' series (all of one length): what
/// the standard error of a metric over seeds is taken from.
NextTokenSeries average_series(const std::vector<NextTokenSeries>& seeds);

}  // namespace tqlab
