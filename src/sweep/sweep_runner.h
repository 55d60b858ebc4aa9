// Running a sweep's work: every work item of the plan on `threads` workers,
// layer by layer, and the synthetic needle's trials, into SweepTotals.
//
// Items run in parallel and each writes its own totals; the KL values go into
// the tails once a layer is done. A layer's pages are released when its items
// are done, so memory does not grow with the number of layers. Results are
// identical for any thread count (sweep_totals.h says why).
//
// Shards and resumed runs compute part of the work (work_units.h): the units
// a shard holds, less those a journal already has, each reported as it is
// done so that it can be journalled, and the run can be stopped between units.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "sweep/sweep_plan.h"
#include "sweep/sweep_totals.h"

namespace tqlab {

struct UnitTotals;

/// SweepOptions::on_progress's `layer` while the model block's units run.
inline constexpr int kModelProgress = -2;

struct SweepOptions {
  int threads = 0;  ///< 0: every core this process may use
  /// Called from a worker after each finished work unit: (units done, units in all, what is being worked
  /// on: the layer number, -1 for the synthetic needle, kModelProgress for the model block).
  std::function<void(std::size_t done, std::size_t total, int layer)> on_progress;

  /// The work units to compute (work_units.h); nullopt: every unit.
  std::optional<std::vector<int>> units;
  /// Adds units computed before (a journal's) to the fresh totals; they are not computed again.
  std::function<void(SweepTotals& totals)> add_known_units;
  /// Called once for each unit computed, as soon as it is, from the worker that computed it;
  /// calls do not overlap. An exception stops the sweep as bad data does.
  std::function<void(const UnitTotals& unit)> on_unit_done;
  /// Polled before each unit starts: once it returns true no unit starts, and
  /// SweepStopped is thrown when those in progress are done (and reported).
  std::function<bool()> stop_requested;
};

/// compute_sweep_totals stopped by SweepOptions::stop_requested; every unit
/// finished before was reported through on_unit_done.
class SweepStopped : public std::runtime_error {
 public:
  SweepStopped() : std::runtime_error("the sweep was stopped") {}
};

struct SweepTiming {
  double total_seconds = 0;      ///< wall time of run_sweep
  double read_seconds = 0;       ///< summed over workers: reading and converting slabs
  double quantize_seconds = 0;   ///< encode + decode
  double attention_seconds = 0;  ///< exact and quantized attention metrics
  double needle_seconds = 0;     ///< both needle tests
  double model_base_seconds = 0;  ///< the model block's base pass
  double model_runs_seconds = 0;  ///< its passes with quantized caches
  int threads = 1;
};

/// The totals of every work item and synthetic trial of `plan` (of
/// `options.units` when given; the others stay not done), then, with a model
/// block, its end-to-end passes; `timing` gets the seconds spent (total_seconds
/// is left to the caller). InputError (naming file, tensor, sequence, head,
/// token) on bad data; SweepStopped when stopped.
SweepTotals compute_sweep_totals(const SweepPlan& plan, const SweepOptions& options, SweepTiming& timing);

}  // namespace tqlab
