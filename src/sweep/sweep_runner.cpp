#include "sweep/sweep_runner.h"

#include <atomic>
#include <chrono>

#include "core/index.h"
#include "core/parallel.h"
#include "sweep/sweep_item.h"

namespace tqlab {

int synthetic_trial_count(const SweepPlan& plan) {
  return plan.synthetic_needle ? plan.config.metrics.needle_options.synth_trials : 0;
}

namespace {

SweepTotals compute_item_totals(const SweepPlan& plan, const SweepOptions& options, SweepTiming& timing) {
  const KvDump& dump = *plan.dump;
  const SweepItems items(dump);
  const RunSeeds run_seeds{static_cast<int>(plan.runs.size()), static_cast<int>(plan.config.seeds.size())};
  const int synthetic_trials = synthetic_trial_count(plan);
  SweepTotals totals =
      empty_sweep_totals(dump, items, run_seeds, synthetic_trials, plan.attention, plan.config.metrics.per_head);
  timing.threads = resolve_thread_count(options.threads);

  const std::size_t total_work = static_cast<std::size_t>(items.count()) + static_cast<std::size_t>(synthetic_trials);
  std::atomic<std::size_t> done{0};
  const auto advance = [&](int layer) {
    const std::size_t now = ++done;
    if (options.on_progress) options.on_progress(now, total_work, layer);
  };

  for (int li = 0; li < static_cast<int>(dump.layers().size()); ++li) {
    const int first = items.first_of_layer(li);
    std::vector<ItemMeasurement> measured(static_cast<std::size_t>(items.layer_items(li)));
    parallel_for(measured.size(), timing.threads, [&](std::size_t local, int) {
      const WorkItem item = items.item(first + static_cast<int>(local));
      measured[local] = measure_item(plan, run_seeds, item);
      advance(at(dump.layers(), li).layer);
    });
    dump.release_layer(li);
    const KvLayerShape& shape = at(dump.layers(), li);
    const int group = shape.q_heads > 0 ? shape.q_heads / shape.kv_heads : 0;
    for (int local = 0; local < static_cast<int>(measured.size()); ++local) {
      ItemMeasurement& item = at(measured, local);
      timing.read_seconds += item.seconds.read;
      timing.quantize_seconds += item.seconds.quantize;
      timing.attention_seconds += item.seconds.attention;
      timing.needle_seconds += item.seconds.needle;
      if (!totals.kl_tails.empty()) {
        for (int rs = 0; rs < static_cast<int>(item.kl.size()); ++rs) {
          add_kl_values(at(totals.kl_tails, rs), items.item(first + local), group, at(item.kl, rs));
        }
      }
      at(totals.items, first + local) = std::move(item.totals);
      item = ItemMeasurement{};  // the item's KL values go now
    }
  }

  if (synthetic_trials > 0) {
    std::vector<double> seconds(static_cast<std::size_t>(synthetic_trials));
    parallel_for(static_cast<std::size_t>(synthetic_trials), timing.threads, [&](std::size_t trial, int) {
      const auto start = std::chrono::steady_clock::now();
      totals.synthetic[trial] = measure_synthetic_trial(plan, run_seeds, static_cast<int>(trial));
      seconds[trial] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      advance(-1);
    });
    for (double spent : seconds) timing.needle_seconds += spent;
  }
  return totals;
}

}  // namespace

SweepTotals compute_sweep_totals(const SweepPlan& plan, const SweepOptions& options, SweepTiming& timing) {
  timing.threads = resolve_thread_count(options.threads);
  SweepTotals totals = plan.dump ? compute_item_totals(plan, options, timing) : SweepTotals{};
  if (plan.model) {
    totals.end_to_end =
        run_sweep_end_to_end(*plan.model, plan.config.seeds, options.threads, options.on_model_progress);
    timing.model_base_seconds = totals.end_to_end->base_seconds;
    timing.model_runs_seconds = totals.end_to_end->runs_seconds;
  }
  return totals;
}

}  // namespace tqlab
