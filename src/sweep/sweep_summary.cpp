#include "sweep/sweep_summary.h"

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/index.h"
#include "core/log.h"
#include "metrics/next_token_metrics.h"

namespace tqlab {
namespace {

// Which clusters a summary covers: every layer, or one.
constexpr int kAllLayers = -1;

// One (run, seed)'s totals added up per cluster, per layer and per trial, in item order.
struct ClusterTotals {
  std::vector<ReconstructionSums> reconstruction;            // per (layer, kv head) cluster
  std::vector<AttentionSums> attention;                      // per (layer, q head) unit
  std::vector<std::vector<RatioSum>> needle;                 // per cluster: [2 * margin + (0 top1, 1 ratio)]
  std::vector<RatioSum> synthetic_weight, synthetic_error;   // per synthetic trial
  std::vector<double> key_bits, value_bits, effective_bits;  // per layer index: bits
  std::vector<double> key_values, value_values;              // per layer index: values
};

ClusterTotals add_up(const SweepPlan& plan, const SweepItems& items, const SweepTotals& totals, int rs) {
  const KvDump& dump = *plan.dump;
  const std::size_t margins = plan.config.metrics.needle_options.margins.size();
  const std::size_t layers = dump.layers().size();
  ClusterTotals out;
  out.reconstruction.resize(static_cast<std::size_t>(items.clusters()));
  out.attention.resize(static_cast<std::size_t>(items.q_units()));
  out.needle.assign(static_cast<std::size_t>(items.clusters()), std::vector<RatioSum>(2 * margins));
  for (auto* series : {&out.key_bits, &out.value_bits, &out.effective_bits, &out.key_values, &out.value_values}) {
    series->assign(layers, 0.0);
  }
  for (int index = 0; index < items.count(); ++index) {
    const ItemTotals& item_totals = at(totals.items, index);
    if (item_totals.tokens == 0) continue;
    const WorkItem item = items.item(index);
    const KvLayerShape& shape = at(dump.layers(), item.layer_index);
    const int group = shape.q_heads > 0 ? shape.q_heads / shape.kv_heads : 0;
    const int cluster = items.cluster(item.layer_index, item.kv_head);
    const ItemRunSeedTotals& run = at(item_totals.run_seeds, rs);
    ReconstructionSums& reconstruction = at(out.reconstruction, cluster);
    for (int sum = 0; sum < kReconstructionSums; ++sum) at(reconstruction, sum) += at(run.reconstruction, sum);
    at(out.key_bits, item.layer_index) += run.key_bits;
    at(out.value_bits, item.layer_index) += run.value_bits;
    at(out.key_values, item.layer_index) += run.key_values;
    at(out.value_values, item.layer_index) += run.value_values;
    at(out.effective_bits, item.layer_index) += run.effective_bits;
    for (int g = 0; g < static_cast<int>(run.attention.size()); ++g) {
      AttentionSums& sums = at(out.attention, items.q_unit(item.layer_index, item.kv_head * group + g));
      for (int sum = 0; sum < kAttentionSums; ++sum) at(sums, sum) += at(at(run.attention, g), sum);
    }
    for (const std::vector<NeedleOutcome>& trial : run.needle) {
      for (std::size_t m = 0; m < margins; ++m) {
        at(out.needle, cluster)[2 * m].add(trial[m].top1 ? 1.0 : 0.0);
        at(out.needle, cluster)[2 * m + 1].add(trial[m].weight_ratio);
      }
    }
  }
  for (const std::vector<SyntheticOutcome>& trial : totals.synthetic) {
    const SyntheticOutcome& outcome = at(trial, rs);
    if (!outcome.measured) continue;
    out.synthetic_weight.emplace_back().add(outcome.weight);
    out.synthetic_error.emplace_back().add(outcome.output_error);
  }
  return out;
}

MetricSummary summarize_clusters(const std::vector<std::vector<RatioSum>>& per_seed, bool root_of_mean) {
  MetricSummary summary;
  const std::size_t seeds = per_seed.size();
  std::vector<RatioSum> averaged(per_seed.front().size());
  double sum = 0;
  bool all = true;
  for (const std::vector<RatioSum>& clusters : per_seed) {
    ClusterEstimate estimate = cluster_estimate(clusters);
    if (root_of_mean) estimate = square_root(estimate);
    summary.per_seed.push_back(estimate.value);
    all = all && estimate.value.has_value();
    if (estimate.value) sum += *estimate.value;
    for (std::size_t c = 0; c < clusters.size(); ++c) {
      averaged[c].numerator += clusters[c].numerator / static_cast<double>(seeds);
      averaged[c].denominator += clusters[c].denominator / static_cast<double>(seeds);
    }
  }
  if (!all) return summary;
  std::vector<double> values;
  for (const auto& value : summary.per_seed) values.push_back(*value);
  const SeedSpread spread = seed_spread(values);
  summary.mean = spread.mean;
  summary.seed_std = spread.std;
  ClusterEstimate pooled = cluster_estimate(averaged);
  if (root_of_mean) pooled = square_root(pooled);
  summary.standard_error = pooled.standard_error;
  return summary;
}

// A statistic without a standard error (a percentile): per seed, their mean and std.
MetricSummary summarize_values(const std::vector<double>& per_seed) {
  MetricSummary summary;
  bool all = true;
  for (double value : per_seed) {
    all = all && !std::isnan(value);
    summary.per_seed.push_back(std::isnan(value) ? std::nullopt : std::optional<double>(value));
  }
  if (!all || per_seed.empty()) return summary;
  const SeedSpread spread = seed_spread(per_seed);
  summary.mean = spread.mean;
  summary.seed_std = spread.std;
  return summary;
}

MetricSummary null_summary(int seeds) {
  MetricSummary summary;
  summary.per_seed.assign(static_cast<std::size_t>(seeds), std::nullopt);
  return summary;
}

double tail_value(const UpperQuantile& tail) { return tail.value().value_or(NAN); }

RunBits bits_of(double key_bits, double value_bits, double key_values, double value_values, double effective) {
  RunBits out;
  out.bits_k = key_values > 0 ? key_bits / key_values : 0;
  out.bits_v = value_values > 0 ? value_bits / value_values : 0;
  const double values = key_values + value_values;
  out.bits_kv = values > 0 ? (key_bits + value_bits) / values : 0;
  out.bits_kv_effective = values > 0 ? effective / values : 0;
  out.compression = out.bits_kv > 0 ? 16.0 / out.bits_kv : 0;
  return out;
}

class Summarizer {
 public:
  Summarizer(const SweepPlan& plan, const SweepTotals& totals)
      : plan_(plan),
        dump_(*plan.dump),
        totals_(totals),
        items_(dump_),
        run_seeds_{static_cast<int>(plan.runs.size()), static_cast<int>(plan.config.seeds.size())},
        layers_(static_cast<int>(dump_.layers().size())) {
    for (int rs = 0; rs < run_seeds_.count(); ++rs) clusters_.push_back(add_up(plan, items_, totals, rs));
  }

  SweepResults summarize() const {
    SweepResults results;
    for (const ItemTotals& item : totals_.items) {
      results.skipped_key_vectors += item.skipped_keys;
      results.skipped_value_vectors += item.skipped_values;
      results.skipped_query_vectors += item.skipped_queries;
      results.needle_trials_measured += item.measured_trials;
    }
    results.needle_trials = static_cast<int>(plan_.needle_trials.size());
    results.synthetic_trials = static_cast<int>(totals_.synthetic.size());
    for (int run = 0; run < run_seeds_.runs; ++run) results.runs.push_back(summarize_run(run));
    return results;
  }

 private:
  // Cluster sums of one (run, seed) over every layer or one.
  template <typename PerCluster>
  std::vector<RatioSum> layer_clusters(int layer, const PerCluster& per_cluster) const {
    std::vector<RatioSum> clusters;
    for (int li = 0; li < layers_; ++li) {
      if (layer != kAllLayers && layer != li) continue;
      for (int head = 0; head < at(dump_.layers(), li).kv_heads; ++head) clusters.push_back(per_cluster(li, head));
    }
    return clusters;
  }
  const RatioSum& reconstruction_unit(int rs, int sum, int li, int head) const {
    return at(at(at(clusters_, rs).reconstruction, items_.cluster(li, head)), sum);
  }
  const RatioSum& attention_unit(int rs, int sum, int li, int q_head) const {
    return at(at(at(clusters_, rs).attention, items_.q_unit(li, q_head)), sum);
  }
  const RatioSum& needle_unit(int rs, int index, int li, int head) const {
    return at(at(at(clusters_, rs).needle, items_.cluster(li, head)), index);
  }
  std::vector<RatioSum> reconstruction(int rs, int sum, int layer) const {
    return layer_clusters(layer, [&](int li, int head) { return reconstruction_unit(rs, sum, li, head); });
  }
  std::vector<RatioSum> attention(int rs, int sum, int layer) const {
    return layer_clusters(layer, [&](int li, int head) {
      const KvLayerShape& shape = at(dump_.layers(), li);
      const int group = shape.q_heads / shape.kv_heads;
      RatioSum cluster;
      for (int g = 0; g < group; ++g) cluster += attention_unit(rs, sum, li, head * group + g);
      return cluster;
    });
  }
  std::vector<RatioSum> needle(int rs, int index, int layer) const {
    return layer_clusters(layer, [&](int li, int head) { return needle_unit(rs, index, li, head); });
  }

  // One run's summary being built: the run, its first (run, seed) index, the result.
  struct RunScope {
    int run = 0;
    int first = 0;
    RunResult& result;
  };
  using PerHeadTable = std::vector<std::vector<std::optional<double>>>;

  RunResult summarize_run(int run) const {
    RunResult result;
    result.run = &at(plan_.runs, run);
    RunScope scope{run, run_seeds_.index(run, 0), result};
    const MetricsConfig& metrics = plan_.config.metrics;
    if (metrics.reconstruction) add_reconstruction(scope);
    if (metrics.attention) add_attention(scope);
    if (metrics.needle && metrics.needle_options.trials > 0) add_needles(scope);
    if (metrics.needle && metrics.needle_options.synth_trials > 0) add_synthetic_needles(scope);
    add_bits(scope);
    return result;
  }

  // clusters_of_seed(rs) for each seed of the run, in seed order.
  template <typename ClustersOfSeed>
  std::vector<std::vector<RatioSum>> seeds_of(const RunScope& scope, const ClustersOfSeed& clusters_of_seed) const {
    std::vector<std::vector<RatioSum>> per_seed;
    for (int s = 0; s < run_seeds_.seeds; ++s) per_seed.push_back(clusters_of_seed(scope.first + s));
    return per_seed;
  }

  // One metric: the run's summary over clusters_of(rs, kAllLayers), its per-layer seed means,
  // and, when asked, per head the seed mean of unit_sum(rs, layer, head) over kv or q heads.
  template <typename ClustersOf, typename UnitSum>
  void add_metric(RunScope& scope, std::string_view name, const ClustersOf& clusters_of, const UnitSum& unit_sum,
                  bool q_heads, bool root) const {
    RunResult& result = scope.result;
    result.metrics.emplace_back(
        std::string(name),
        summarize_clusters(seeds_of(scope, [&](int rs) { return clusters_of(rs, kAllLayers); }), root));
    std::vector<std::optional<double>> by_layer;
    for (int li = 0; li < layers_; ++li) {
      by_layer.push_back(summarize_clusters(seeds_of(scope, [&](int rs) { return clusters_of(rs, li); }), root).mean);
    }
    result.per_layer.emplace_back(std::string(name), std::move(by_layer));
    if (plan_.config.metrics.per_head) {
      result.per_head.emplace_back(std::string(name), per_head_table(scope, unit_sum, q_heads, root));
    }
  }

  template <typename UnitSum>
  PerHeadTable per_head_table(const RunScope& scope, const UnitSum& unit_sum, bool q_heads, bool root) const {
    PerHeadTable table;
    for (int li = 0; li < layers_; ++li) {
      const KvLayerShape& shape = at(dump_.layers(), li);
      std::vector<std::optional<double>>& row = table.emplace_back();
      for (int head = 0; head < (q_heads ? shape.q_heads : shape.kv_heads); ++head) {
        const auto unit = [&](int rs) { return std::vector<RatioSum>{unit_sum(rs, li, head)}; };
        row.push_back(summarize_clusters(seeds_of(scope, unit), root).mean);
      }
    }
    return table;
  }

  // A metric this sweep could not measure: null for every seed and layer.
  void add_null(RunScope& scope, std::string_view name) const {
    scope.result.metrics.emplace_back(std::string(name), null_summary(run_seeds_.seeds));
    scope.result.per_layer.emplace_back(std::string(name),
                                        std::vector<std::optional<double>>(static_cast<std::size_t>(layers_)));
  }

  void add_reconstruction(RunScope& scope) const {
    for (const auto& row : kReconstructionMetricNames.rows()) {
      const int sum = row.value;
      add_metric(
          scope, row.name, [&](int rs, int layer) { return reconstruction(rs, sum, layer); },
          [&](int rs, int li, int head) { return reconstruction_unit(rs, sum, li, head); }, false, false);
    }
  }

  void add_attention(RunScope& scope) const {
    for (const auto& row : kAttentionMetricNames.rows()) {
      const int sum = row.value;
      if (!plan_.attention) {
        add_null(scope, row.name);
        if (sum == kKl) add_null(scope, "attn_kl_p95");
        continue;
      }
      add_metric(
          scope, row.name, [&](int rs, int layer) { return attention(rs, sum, layer); },
          [&](int rs, int li, int head) { return attention_unit(rs, sum, li, head); }, true, sum == kIpMeanSquare);
      if (sum == kKl) add_kl_tails(scope.run, scope.result);
    }
  }

  void add_needles(RunScope& scope) const {
    const std::vector<double>& margins = plan_.config.metrics.needle_options.margins;
    for (int m = 0; m < static_cast<int>(margins.size()); ++m) {
      for (int kind = 0; kind < 2; ++kind) {
        const std::string name =
            fmt::format("{}@{}", kind == 0 ? "needle_top1" : "needle_weight_ratio", at(margins, m));
        if (!plan_.needle || plan_.needle_trials.empty()) {
          add_null(scope, name);
          continue;
        }
        const int index = 2 * m + kind;
        add_metric(
            scope, name, [&](int rs, int layer) { return needle(rs, index, layer); },
            [&](int rs, int li, int head) { return needle_unit(rs, index, li, head); }, false, false);
      }
    }
  }

  void add_synthetic_needles(RunScope& scope) const {
    for (int kind = 0; kind < 2; ++kind) {
      const char* name = kind == 0 ? "needle_synth_weight" : "needle_synth_out_err";
      if (scope.result.run->synthetic_needle_quantizer < 0) {
        scope.result.metrics.emplace_back(name, null_summary(run_seeds_.seeds));
        continue;
      }
      const auto trials = [&](int rs) {
        const ClusterTotals& totals = at(clusters_, rs);
        return kind == 0 ? totals.synthetic_weight : totals.synthetic_error;
      };
      scope.result.metrics.emplace_back(name, summarize_clusters(seeds_of(scope, trials), false));
    }
  }

  // Bits, from the first seed (packed sizes do not depend on the seed).
  void add_bits(RunScope& scope) const {
    const ClusterTotals& bits = at(clusters_, scope.first);
    double key_bits = 0, value_bits = 0, key_values = 0, value_values = 0, effective = 0;
    for (int li = 0; li < layers_; ++li) {
      scope.result.layer_bits.push_back(bits_of(at(bits.key_bits, li), at(bits.value_bits, li), at(bits.key_values, li),
                                                at(bits.value_values, li), at(bits.effective_bits, li)));
      key_bits += at(bits.key_bits, li);
      value_bits += at(bits.value_bits, li);
      key_values += at(bits.key_values, li);
      value_values += at(bits.value_values, li);
      effective += at(bits.effective_bits, li);
    }
    scope.result.bits = bits_of(key_bits, value_bits, key_values, value_values, effective);
  }

  // attn_kl_p95: per seed over every query, per layer and per head.
  void add_kl_tails(int run, RunResult& result) const {
    const int seeds = run_seeds_.seeds;
    const auto tails_of = [&](int s) -> const KlTails& { return at(totals_.kl_tails, run_seeds_.index(run, s)); };
    std::vector<double> tails;
    for (int s = 0; s < seeds; ++s) tails.push_back(tail_value(*tails_of(s).all));
    result.metrics.emplace_back("attn_kl_p95", summarize_values(tails));
    std::vector<std::optional<double>> by_layer;
    for (int li = 0; li < layers_; ++li) {
      std::vector<double> values;
      for (int s = 0; s < seeds; ++s) values.push_back(tail_value(at(tails_of(s).layer, li)));
      by_layer.push_back(summarize_values(values).mean);
    }
    result.per_layer.emplace_back("attn_kl_p95", std::move(by_layer));
    if (!plan_.config.metrics.per_head) return;
    std::vector<std::vector<std::optional<double>>> table;
    for (int li = 0; li < layers_; ++li) {
      std::vector<std::optional<double>>& row = table.emplace_back();
      for (int head = 0; head < static_cast<int>(at(tails_of(0).head, li).size()); ++head) {
        std::vector<double> values;
        for (int s = 0; s < seeds; ++s) values.push_back(tail_value(at(at(tails_of(s).head, li), head)));
        row.push_back(summarize_values(values).mean);
      }
    }
    result.per_head.emplace_back("attn_kl_p95", std::move(table));
  }

  const SweepPlan& plan_;
  const KvDump& dump_;
  const SweepTotals& totals_;
  const SweepItems items_;
  const RunSeeds run_seeds_;
  const int layers_;
  std::vector<ClusterTotals> clusters_;  // per (run, seed)
};

// Bits of a model's cache from the packed bytes of layers [first, last), window and
// sink tokens at 16 bits in the effective figure (a prefill leaves each chunk's sinks
// and last W tokens exact, recent and tail alike), as the offline path counts them.
RunBits cache_bits(const KvCacheBytes& bytes, std::size_t first, std::size_t last, double exact_share) {
  double key_bits = 0, value_bits = 0, key_values = 0, value_values = 0;
  for (std::size_t l = first; l < last; ++l) {
    key_bits += 8.0 * static_cast<double>(bytes.key[l]);
    value_bits += 8.0 * static_cast<double>(bytes.value[l]);
    key_values += static_cast<double>(bytes.key_values[l]);
    value_values += static_cast<double>(bytes.value_values[l]);
  }
  const double effective = (1 - exact_share) * (key_bits + value_bits) + exact_share * 16 * (key_values + value_values);
  return bits_of(key_bits, value_bits, key_values, value_values, effective);
}

void add_end_to_end(const SweepPlan& plan, const SweepEndToEnd& end_to_end, SweepResults& results) {
  const double nll = mean_estimate(end_to_end.base.nll).value;
  results.end_to_end = EndToEndBase{end_to_end.base.perplexity, end_to_end.scored_tokens, nll};
  // exp(NLL) overflows past 709.78 nats: the NLL stays measured, the perplexity cannot be a double.
  if (!std::isfinite(end_to_end.base.perplexity.value)) {
    log::warn(
        "the exact cache's perplexity exp({:.6g}) is beyond double range: e2e perplexities are written as "
        "null, its mean NLL as {:.6g} nats",
        nll, nll);
  }
  const int seeds = static_cast<int>(plan.config.seeds.size());
  const int ctx = plan.model->options.ctx;
  for (int run = 0; run < static_cast<int>(results.runs.size()); ++run) {
    RunResult& result = at(results.runs, run);
    const auto first = end_to_end.run_seeds.begin() + static_cast<std::ptrdiff_t>(run) * seeds;
    const std::vector<RunSeedResult> of_run(first, first + seeds);
    for (auto& named : summarize_seeds(of_run)) result.metrics.push_back(std::move(named));
    if (plan.dump) continue;  // the bits are the dump's
    const ExactTokens exact = result.run->exact(plan.config.metrics.attention_options.window_mode);
    const double share = static_cast<double>(exact.cached_exact_tokens(ctx, ctx)) / ctx;
    const KvCacheBytes& bytes = of_run.front().bytes;  // packed sizes do not depend on the seed
    for (std::size_t layer = 0; layer < bytes.key.size(); ++layer) {
      result.layer_bits.push_back(cache_bits(bytes, layer, layer + 1, share));
    }
    result.bits = cache_bits(bytes, 0, bytes.key.size(), share);
  }
}

}  // namespace

SweepResults summarize_sweep(const SweepPlan& plan, const SweepTotals& totals) {
  SweepResults results;
  if (plan.dump) {
    results = Summarizer(plan, totals).summarize();
  } else {
    for (const PlannedRun& run : plan.runs) results.runs.emplace_back().run = &run;
  }
  if (totals.end_to_end) add_end_to_end(plan, assemble_end_to_end(*totals.end_to_end), results);
  return results;
}

}  // namespace tqlab
