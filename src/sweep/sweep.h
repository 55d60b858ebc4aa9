// The sweep (DESIGN.md "Sweep config and results"): every run of a plan over
// the dump, layer by layer, each (layer, sequence, kv head) slab one work item.
//
// Per item, each distinct quantization (role, spec, seed) is made once and
// shared by the runs that use it; the exact attention of each (q head, chunk,
// query block) is computed once and every run is measured against it
// (AttentionBlock). Items run on `threads` workers; each writes its own sums,
// which are reduced in item order, so results are identical for any thread
// count. A layer's pages are released when its items are done.
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
//   needle: needle_top1@M, needle_weight_ratio@M per margin M (needle.h), and
//     needle_synth_weight, needle_synth_out_err (seed 001's test).
// Each mean carries its standard error with (layer, kv head) as clusters
// (cluster_estimate.h; the synthetic needle's trials are independent clusters).
// With several seeds each metric is computed per seed; the reported mean is
// their mean, std their sample standard deviation, and the standard error that
// of the seed-averaged cluster sums.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sweep/sweep_plan.h"

namespace tqlab {

struct SweepOptions {
  int threads = 0;  ///< 0: every core this process may use
  /// Called from a worker after each finished work item: (items done, items in all, layer number being worked on).
  std::function<void(std::size_t done, std::size_t total, int layer)> on_progress;
};

/// One metric of one run.
struct MetricSummary {
  std::optional<double> mean;            ///< mean over seeds (null: nothing measured)
  std::optional<double> standard_error;  ///< cluster-robust, of the seed-averaged sums
  std::optional<double> seed_std;        ///< sample std over seeds (null with one seed)
  std::vector<std::optional<double>> per_seed;
};

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

struct SweepTiming {
  double total_seconds = 0;      ///< wall time of run_sweep
  double read_seconds = 0;       ///< summed over workers: reading and converting slabs
  double quantize_seconds = 0;   ///< encode + decode
  double attention_seconds = 0;  ///< exact and quantized attention metrics
  double needle_seconds = 0;     ///< both needle tests
  int threads = 1;
};

struct SweepResults {
  std::vector<RunResult> runs;  ///< in plan order
  int needle_trials = 0;        ///< planted-needle trials placed (0 when none could be)
  int needle_trials_measured = 0;  ///< of those, measured: not in a slab that lost tokens, query not
                                   ///< zero, needle plantable (needle.h)
  int synthetic_trials = 0;
  std::int64_t skipped_key_vectors = 0, skipped_value_vectors = 0, skipped_query_vectors = 0;
  SweepTiming timing;
};

/// Runs the sweep. InputError (naming file, tensor, sequence, head, token) on
/// bad data; nothing is returned then.
SweepResults run_sweep(const SweepPlan& plan, const SweepOptions& options);

}  // namespace tqlab
