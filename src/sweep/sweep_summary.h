// From a sweep's totals to its results: per run, each metric's mean, cluster
// standard error, spread over seeds and per-seed values, with per-layer (and
// per-head) breakdowns and the bits per value.
//
// Metrics (names as in the results):
//   reconstruction: k_rel_mse, v_rel_mse = sum |x - x~|^2 / sum |x|^2; k_nmse, v_nmse =
//     mean over vectors of |x - x~|^2 / |x|^2; k_cos, v_cos = mean cosine(x, x~) (vectors
//     with |x| = 0 are left out of the means; cosine with x~ = 0 is 0). Over every token:
//     the quantizer's own error, whatever the run's window and sinks.
//   attention (per query, then the mean over queries): attn_kl = KL(P || P~) in nats,
//     attn_kl_p95 its 95th percentile (numpy's linear rule), attn_top1, attn_top5,
//     attn_cos, attn_out_rel_err = |P~ V~ - P V| / |P V| (queries with P V = 0 left out),
//     ip_bias = mean over the query's attended keys of the logit error, ip_rmse = sqrt of
//     the mean over queries of its mean squared logit error. Logits include the scale;
//     the run's exact tokens count with error 0.
//   needle: needle_top1@M, needle_weight_ratio@M per margin M (metrics/needle.h), and
//     needle_synth_weight, needle_synth_out_err (the synthetic test).
//   end to end, with a model block: e2e_ppl, e2e_ppl_delta_pct, e2e_ln_ppl_ratio, e2e_kld and
//     its percentiles, e2e_top1, e2e_dp, e2e_dp_rms (metrics/next_token_metrics.h), after the
//     others; their standard errors are llama.cpp's, over scored tokens (of the seed-averaged
//     per-token values with several seeds). Without a dump (end-to-end metrics only) the bits
//     come from the model's cache.
// Each mean carries its standard error with (layer, kv head) as clusters
// (metrics/cluster_estimate.h; the synthetic needle's trials are independent
// clusters). With several seeds each metric is computed per seed; the reported
// mean is their mean, std their sample standard deviation, and the standard
// error that of the seed-averaged cluster sums. Definitions: docs/SWEEP.md#metrics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/metric_summary.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_runner.h"
#include "sweep/sweep_totals.h"

namespace tqlab {

template <typename T>
using Named = std::vector<std::pair<std::string, T>>;

struct RunBits {
  double bits_k = 0, bits_v = 0;
  double bits_kv = 0;            ///< over K and V, weighted by their element counts
  double bits_kv_effective = 0;  ///< window and sink tokens counted at 16 bits
  double compression = 0;        ///< 16 / bits_kv
};

struct RunResult {
  const PlannedRun* run = nullptr;
  RunBits bits;
  std::vector<RunBits> layer_bits;  ///< per layer index
  Named<MetricSummary> metrics;     ///< in the order listed above; a family not asked for is absent
  Named<std::vector<std::optional<double>>> per_layer;              ///< seed means per layer index
  Named<std::vector<std::vector<std::optional<double>>>> per_head;  ///< [layer index][head] (per_head only)
};

/// What a model block's base pass measured, for the results' "e2e" section.
struct EndToEndBase {
  ValueAndError perplexity;              ///< PPL of the exact cache, with llama.cpp's standard error
  std::int64_t scored_tokens = 0;   ///< predictions scored per pass
  double nll = 0;                   ///< mean NLL per scored token, nats: finite whenever the logits are
};

struct SweepResults {
  std::vector<RunResult> runs;  ///< in plan order
  std::optional<EndToEndBase> end_to_end;  ///< with a model block
  int needle_trials = 0;        ///< planted-needle trials placed (0 when none could be)
  int needle_trials_measured = 0;  ///< of those, measured: not in a slab that lost tokens, query not
                                   ///< zero, needle plantable (metrics/needle.h)
  int synthetic_trials = 0;
  std::int64_t skipped_key_vectors = 0, skipped_value_vectors = 0, skipped_query_vectors = 0;
  SweepTiming timing;
};

/// The results of `plan` from its totals (every item done). The timing is left empty.
SweepResults summarize_sweep(const SweepPlan& plan, const SweepTotals& totals);

}  // namespace tqlab
