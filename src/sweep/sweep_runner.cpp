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

// The model block's units of `todo` (model_base and model_run units), chunk by
// chunk: the chunk's base once, then each of its (run, seed)s. `may_start` is
// polled before each unit, `finished` reports it.
template <typename MayStart, typename Finished>
void compute_model_units(const SweepPlan& plan, const WorkUnits& units, const std::vector<int>& todo,
                         const SweepOptions& options, SweepTiming& timing, SweepTotals& totals,
                         const MayStart& may_start, const Finished& finished) {
  if (!plan.model) return;
  SweepModel& model = *plan.model;
  const int chunks = units.model_chunks();
  std::vector<std::vector<int>> by_chunk(static_cast<std::size_t>(chunks));
  for (int unit : todo) at(by_chunk, units.model_chunk(unit)).push_back(unit);
  const int seeds = units.run_seeds().seeds;
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const std::vector<int>& wanted = at(by_chunk, chunk);
    if (wanted.empty() || !may_start()) continue;
    auto start = Clock::now();
    const std::unique_ptr<EndToEndSession> session = chunk_session(model, chunk, options.threads);
    timing.model_base_seconds += seconds_since(start);
    for (int unit : wanted) {
      if (!may_start()) break;
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
      finished(measured, kModelProgress);
      add_unit_totals(totals, units, std::move(measured));
    }
  }
}

}  // namespace

SweepTotals compute_sweep_totals(const SweepPlan& plan, const SweepOptions& options, SweepTiming& timing) {
  const WorkUnits units(plan);
  const SweepItems& items = units.items();
  const RunSeeds& run_seeds = units.run_seeds();
  SweepTotals totals = empty_plan_totals(plan, units);
  if (options.add_known_units) options.add_known_units(totals);
  timing.threads = resolve_thread_count(options.threads);
  const std::size_t keep = kl_values_kept(totals);

  std::vector<char> wanted(static_cast<std::size_t>(units.count()), options.units ? 0 : 1);
  for (int unit : options.units.value_or(std::vector<int>{})) {
    if (unit < 0 || unit >= units.count()) throw InternalError("a sweep asked for a unit it does not have");
    at(wanted, unit) = 1;
  }
  std::size_t total_work = 0, known = 0;
  for (int unit = 0; unit < units.count(); ++unit) {
    total_work += static_cast<std::size_t>(at(wanted, unit));
    known += at(wanted, unit) && unit_done(totals, units, unit);
  }
  const auto to_compute = [&](int first, int count) {
    std::vector<int> todo;
    for (int unit = first; unit < first + count; ++unit) {
      if (at(wanted, unit) && !unit_done(totals, units, unit)) todo.push_back(unit);
    }
    return todo;
  };

  std::atomic<std::size_t> done{known};
  std::atomic<bool> stopped{false};
  std::mutex report_mutex;
  const auto may_start = [&] {
    if (!stopped && options.stop_requested && options.stop_requested()) stopped = true;
    return !stopped;
  };
  // Reports a finished unit, then counts it: a unit is "done" once its report returned.
  const auto finished = [&](const UnitTotals& unit, int layer) {
    if (options.on_unit_done) {
      const std::lock_guard lock(report_mutex);
      try {
        options.on_unit_done(unit);
      } catch (...) {
        stopped = true;  // the others start nothing more; this error is the one reported
        throw;
      }
    }
    const std::size_t now = ++done;
    if (options.on_progress) options.on_progress(now, total_work, layer);
  };

  const int layers = plan.dump ? static_cast<int>(plan.dump->layers().size()) : 0;
  for (int li = 0; li < layers; ++li) {
    const KvDump& dump = *plan.dump;
    const std::vector<int> todo = to_compute(items.first_of_layer(li), items.layer_items(li));
    if (todo.empty()) continue;
    std::vector<std::optional<UnitTotals>> measured(todo.size());
    std::vector<ItemSeconds> seconds(todo.size());
    parallel_for(todo.size(), timing.threads, [&](std::size_t i, int) {
      if (!may_start()) return;
      ItemMeasurement measurement = measure_item(plan, run_seeds, items.item(todo[i]));
      seconds[i] = measurement.seconds;
      measured[i] = item_unit_totals(todo[i], std::move(measurement), keep);
      finished(*measured[i], at(dump.layers(), li).layer);
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
    if (stopped) throw SweepStopped();
  }

  const std::vector<int> trials = to_compute(items.count(), units.synthetic_trials());
  std::vector<std::optional<UnitTotals>> measured(trials.size());
  std::vector<double> seconds(trials.size());
  parallel_for(trials.size(), timing.threads, [&](std::size_t i, int) {
    if (!may_start()) return;
    const auto start = Clock::now();
    UnitTotals& unit = measured[i].emplace();
    unit.unit = trials[i];
    unit.synthetic = measure_synthetic_trial(plan, run_seeds, units.synthetic_trial(trials[i]));
    seconds[i] = seconds_since(start);
    finished(unit, -1);
  });
  for (std::size_t i = 0; i < trials.size(); ++i) {
    timing.needle_seconds += seconds[i];
    if (measured[i] && !measured[i]->synthetic.empty()) add_unit_totals(totals, units, std::move(*measured[i]));
  }
  if (stopped) throw SweepStopped();

  compute_model_units(plan, units, to_compute(units.first_model_unit(), units.count() - units.first_model_unit()),
                      options, timing, totals, may_start, finished);
  if (stopped) throw SweepStopped();
  return totals;
}

}  // namespace tqlab
