// What a sweep sums: the totals every summary statistic is computed from.
//
// Every additive quantity is kept per work item (sweep_items.h) and per
// (run, seed), exactly as the item produced it, and the summary adds them in
// item order (sweep_summary.h). Means and standard errors are derived from
// these totals, never averaged from partial means: a cluster-robust standard
// error cannot be rebuilt from the means and errors of parts. So totals
// computed in pieces — by several threads, shards of a cluster job, or a run
// resumed after a kill — give the same document, byte for byte, as totals
// computed in one go.
//
// The attention KL percentiles are not additive; they are kept as exact
// upper-tail sets (metrics/quantile.h), whose value does not depend on the
// order the KL values arrive in.
//
// Sums (metrics/cluster_estimate.h's RatioSum: numerator, denominator):
//   reconstruction, per item: sum |x - x~|^2 over sum |x|^2 (rel_mse), and the
//     per-vector |x - x~|^2 / |x|^2 and cosine over the vector count (nmse, cos),
//     for K and V;
//   attention, per item and q head of its group: per-query KL, top-1, top-5,
//     cosine, output error (queries with P V = 0 not counted), logit bias and
//     mean squared logit error, each over the query count;
//   needle: per trial measured in the item, per margin, its outcome;
//   bits: packed bits and value counts of K and V, and the effective bits
//     (exact tokens at 16 bits).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/name_table.h"
#include "metrics/cluster_estimate.h"
#include "metrics/needle.h"
#include "metrics/quantile.h"
#include "sweep/sweep_items.h"
#include "sweep/sweep_model.h"

namespace tqlab {

enum ReconstructionSum { kKeyRelMse, kValueRelMse, kKeyNmse, kValueNmse, kKeyCos, kValueCos, kReconstructionSums };
enum AttentionSum { kKl, kTop1, kTop5, kCos, kOutErr, kIpBias, kIpMeanSquare, kAttentionSums };
using ReconstructionSums = std::array<RatioSum, kReconstructionSums>;
using AttentionSums = std::array<RatioSum, kAttentionSums>;

/// Each sum's metric name in the results, one row per sum in enum order: the summary
/// (sweep_summary.cpp) writes the metrics in these rows' order.
inline constexpr auto kReconstructionMetricNames = make_name_table<ReconstructionSum>({{kKeyRelMse, "k_rel_mse"},
                                                                                       {kValueRelMse, "v_rel_mse"},
                                                                                       {kKeyNmse, "k_nmse"},
                                                                                       {kValueNmse, "v_nmse"},
                                                                                       {kKeyCos, "k_cos"},
                                                                                       {kValueCos, "v_cos"}});
inline constexpr auto kAttentionMetricNames = make_name_table<AttentionSum>({{kKl, "attn_kl"},
                                                                             {kTop1, "attn_top1"},
                                                                             {kTop5, "attn_top5"},
                                                                             {kCos, "attn_cos"},
                                                                             {kOutErr, "attn_out_rel_err"},
                                                                             {kIpBias, "ip_bias"},
                                                                             {kIpMeanSquare, "ip_rmse"}});

/// True when row i of `table` names enum value i, for every row: a table of every sum, in enum order.
template <class Table, std::size_t Count>
constexpr bool names_every_sum_in_order(const Table& table) {
  if (table.rows().size() != Count) return false;
  for (std::size_t i = 0; i < Count; ++i) {
    if (static_cast<std::size_t>(table.rows()[i].value) != i) return false;
  }
  return true;
}
static_assert(
    names_every_sum_in_order<decltype(kReconstructionMetricNames), kReconstructionSums>(kReconstructionMetricNames));
static_assert(names_every_sum_in_order<decltype(kAttentionMetricNames), kAttentionSums>(kAttentionMetricNames));

/// The quantile reported for attention KL (attn_kl_p95).
inline constexpr double kKlTailQuantile = 0.95;

/// What one work item adds to one (run, seed).
struct ItemRunSeedTotals {
  ReconstructionSums reconstruction{};
  std::vector<AttentionSums> attention;            ///< per q head of the item's group (attention only)
  std::vector<std::vector<NeedleOutcome>> needle;  ///< per trial measured here: per margin
  double key_bits = 0, value_bits = 0;             ///< packed bits of the item's K and V
  double key_values = 0, value_values = 0;         ///< values quantized
  double effective_bits = 0;                       ///< K and V bits with the exact tokens at 16 bits
};

/// One work item's totals.
struct ItemTotals {
  bool done = false;                         ///< computed (every item is, after a whole sweep)
  int tokens = 0;                            ///< tokens measured, after non-finite ones were left out; 0: none
  std::vector<ItemRunSeedTotals> run_seeds;  ///< per (run, seed); empty when tokens == 0
  std::int64_t skipped_keys = 0, skipped_values = 0, skipped_queries = 0;
  int measured_trials = 0;  ///< planted-needle trials measured in this item
};

/// The attention KL tails of one (run, seed), over every measured query.
struct KlTails {
  std::optional<UpperQuantile> all;
  std::vector<UpperQuantile> layer;              ///< per layer index
  std::vector<std::vector<UpperQuantile>> head;  ///< per layer index, q head (per-head breakdowns only)
};

/// One synthetic-needle trial's outcome for one (run, seed).
struct SyntheticOutcome {
  bool measured = false;  ///< false when the run's K spec cannot take the test's head dim
  double weight = 0;      ///< the needle's weight under P~
  double output_error = 0;
};

struct SweepTotals {
  std::vector<ItemTotals> items;                         ///< per work item, in item order
  std::vector<std::vector<SyntheticOutcome>> synthetic;  ///< per synthetic trial: per (run, seed)
  std::vector<KlTails> kl_tails;                         ///< per (run, seed)
  /// With a model block: per chunk, the base's nll and each (run, seed)'s per-token series the e2e_* metrics
  /// come from.
  std::optional<EndToEndTotals> end_to_end;
};

/// Empty totals sized for a sweep of `run_seeds` over `dump`'s items, with
/// `synthetic_trials` trials and KL tails when `attention` (per head too when
/// `per_head`).
SweepTotals empty_sweep_totals(const KvDump& dump, const SweepItems& items, const RunSeeds& run_seeds,
                               int synthetic_trials, bool attention, bool per_head);

/// Feeds the KL values one item measured into the (run, seed)'s tails:
/// kl[g] holds the values of the item's g-th q head.
void add_kl_values(KlTails& tails, const WorkItem& item, int group, const std::vector<std::vector<double>>& kl);

}  // namespace tqlab
