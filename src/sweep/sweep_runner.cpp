#include "sweep/sweep_runner.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/index.h"
#include "core/parallel.h"
#include "sweep/sweep_item.h"
#include "sweep/sweep_model.h"
#include "sweep/work_units.h"

namespace tqlab {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The units a sweep computes, and what the workers computing them share: whether another unit may start
// (no stop asked for, no report failed), and the report and count of each finished one.
class UnitProgress {
 public:
  // The wanted units are options.units (all when not given); those `totals` holds already count as done.
  UnitProgress(const WorkUnits& units, const SweepTotals& totals, const SweepOptions& options)
      : units_(units), totals_(totals), options_(options) {
    wanted_.assign(static_cast<std::size_t>(units.count()), options.units ? 0 : 1);
    for (int unit : options.units.value_or(std::vector<int>{})) {
      if (unit < 0 || unit >= units.count()) throw InternalError("a sweep asked for a unit it does not have");
      at(wanted_, unit) = 1;
    }
    std::size_t known = 0;
    for (int unit = 0; unit < units.count(); ++unit) {
      total_work_ += static_cast<std::size_t>(at(wanted_, unit));
      known += at(wanted_, unit) && unit_done(totals, units, unit);
    }
    done_ = known;
  }

  // The wanted units of [first, first + count) that the totals do not hold yet, in order.
  std::vector<int> to_compute(int first, int count) const {
    std::vector<int> todo;
    for (int unit = first; unit < first + count; ++unit) {
      if (at(wanted_, unit) && !unit_done(totals_, units_, unit)) todo.push_back(unit);
    }
    return todo;
  }

  // Whether a unit may start: false from the first stop request or failed report on.
  bool may_start() {
    if (!stopped_ && options_.stop_requested && options_.stop_requested()) stopped_ = true;
    return !stopped_;
  }

  // Reports a finished unit, then counts it: a unit is "done" once its report returned. `layer` as
  // SweepOptions::on_progress takes it.
  void finished(const UnitTotals& unit, int layer) {
    if (options_.on_unit_done) {
      const std::lock_guard lock(report_mutex_);
      try {
        options_.on_unit_done(unit);
      } catch (...) {
        stopped_ = true;  // the others start nothing more; this error is the one reported
        throw;
      }
    }
    const std::size_t now = ++done_;
    if (options_.on_progress) options_.on_progress(now, total_work_, layer);
  }

  bool stopped() const { return stopped_; }

 private:
  const WorkUnits& units_;
  const SweepTotals& totals_;  ///< read as units are added to it
  const SweepOptions& options_;
  std::vector<char> wanted_;    ///< per unit: 1 to compute
  std::size_t total_work_ = 0;  ///< wanted units, done or not
  std::atomic<std::size_t> done_{0};
  std::atomic<bool> stopped_{false};
  std::mutex report_mutex_;
};

// The dump's work items of `todo`, layer by layer: each layer's items in parallel, then their totals (keeping
// `keep` KL values) added in order and the layer's data released.
void compute_dump_items(const SweepPlan& plan, const WorkUnits& units, std::size_t keep, UnitProgress& progress,
                        SweepTiming& timing, SweepTotals& totals) {
  const SweepItems& items = units.items();
  const int layers = plan.dump ? static_cast<int>(plan.dump->layers().size()) : 0;
  for (int li = 0; li < layers; ++li) {
    const KvDump& dump = *plan.dump;
    const std::vector<int> todo = progress.to_compute(items.first_of_layer(li), items.layer_items(li));
    if (todo.empty()) continue;
    std::vector<std::optional<UnitTotals>> measured(todo.size());
    std::vector<ItemSeconds> seconds(todo.size());
    parallel_for(todo.size(), timing.threads, [&](std::size_t i, int) {
      if (!progress.may_start()) return;
      ItemMeasurement measurement = measure_item(plan, units.run_seeds(), items.item(todo[i]));
      seconds[i] = measurement.seconds;
      measured[i] = item_unit_totals(todo[i], std::move(measurement), keep);
      progress.finished(*measured[i], at(dump.layers(), li).layer);
    });
    dump.release_layer(li);
    for (std::size_t i = 0; i < todo.size(); ++i) {
      timing.read_seconds += seconds[i].read;
      timing.quantize_seconds += seconds[i].quantize;
      timing.attention_seconds += seconds[i].attention;
      timing.needle_seconds += seconds[i].needle;
      if (measured[i]) add_unit_totals(totals, units, std::move(*measured[i]));
      measured[i].reset();  // the item's KL values go now
    }
    if (progress.stopped()) throw SweepStopped();
  }
}

// The synthetic needle trials still to compute, in parallel, then their totals added in order.
void compute_synthetic_trials(const SweepPlan& plan, const WorkUnits& units, UnitProgress& progress,
                              SweepTiming& timing, SweepTotals& totals) {
  const std::vector<int> trials = progress.to_compute(units.items().count(), units.synthetic_trials());
  std::vector<std::optional<UnitTotals>> measured(trials.size());
  std::vector<double> seconds(trials.size());
  parallel_for(trials.size(), timing.threads, [&](std::size_t i, int) {
    if (!progress.may_start()) return;
    const auto start = Clock::now();
    UnitTotals& unit = measured[i].emplace();
    unit.unit = trials[i];
    unit.synthetic = measure_synthetic_trial(plan, units.run_seeds(), units.synthetic_trial(trials[i]));
    seconds[i] = seconds_since(start);
    progress.finished(unit, -1);
  });
  for (std::size_t i = 0; i < trials.size(); ++i) {
    timing.needle_seconds += seconds[i];
    if (measured[i] && !measured[i]->synthetic.empty()) add_unit_totals(totals, units, std::move(*measured[i]));
  }
  if (progress.stopped()) throw SweepStopped();
}

// The model block's units still to compute (model_base and model_run units), chunk by chunk: the chunk's
// base once, then each of its (run, seed)s.
void compute_model_units(const SweepPlan& plan, const WorkUnits& units, const SweepOptions& options,
                         UnitProgress& progress, SweepTiming& timing, SweepTotals& totals) {
  if (!plan.model) return;
  const std::vector<int> todo = progress.to_compute(units.first_model_unit(), units.count() - units.first_model_unit());
  SweepModel& model = *plan.model;
  const int chunks = units.model_chunks();
  std::vector<std::vector<int>> by_chunk(static_cast<std::size_t>(chunks));
  for (int unit : todo) at(by_chunk, units.model_chunk(unit)).push_back(unit);
  const int seeds = units.run_seeds().seeds;
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const std::vector<int>& wanted = at(by_chunk, chunk);
    if (wanted.empty() || !progress.may_start()) continue;
    auto start = Clock::now();
    const std::unique_ptr<EndToEndSession> session = chunk_session(model, chunk, options.threads);
    timing.model_base_seconds += seconds_since(start);
    for (int unit : wanted) {
      if (!progress.may_start()) break;
      UnitTotals measured;
      measured.unit = unit;
      if (units.kind(unit) == UnitKind::model_base) {
        measured.base_nll = session->base().nll;
      } else {
        const int run_seed = units.model_run_seed(unit);
        KvCachePlan& run = at(model.runs, run_seed / seeds);
        run.cache.seed = at(plan.config.seeds, run_seed % seeds);
        start = Clock::now();
        measured.model_run = session->run(run.cache);
        timing.model_runs_seconds += seconds_since(start);
      }
      progress.finished(measured, kModelProgress);
      add_unit_totals(totals, units, std::move(measured));
    }
  }
}

}  // namespace

SweepTotals compute_sweep_totals(const SweepPlan& plan, const SweepOptions& options, SweepTiming& timing) {
  const WorkUnits units(plan);
  SweepTotals totals = empty_plan_totals(plan, units);
  if (options.add_known_units) options.add_known_units(totals);
  timing.threads = resolve_thread_count(options.threads);
  const std::size_t keep = kl_values_kept(totals);
  UnitProgress progress(units, totals, options);

  compute_dump_items(plan, units, keep, progress, timing, totals);
  compute_synthetic_trials(plan, units, progress, timing, totals);
  compute_model_units(plan, units, options, progress, timing, totals);
  if (progress.stopped()) throw SweepStopped();
  return totals;
}

}  // namespace tqlab
