// Running a sweep's work: every work item of the plan on `threads` workers,
// layer by layer, and the synthetic needle's trials, into SweepTotals.
//
// Items run in parallel and each writes its own totals; the KL values go into
// the tails once a layer is done. A layer's pages are released when its items
// are done, so memory does not grow with the number of layers. Results are
// identical for any thread count (sweep_totals.h says why).
#pragma once

#include <cstddef>
#include <functional>

#include "sweep/sweep_plan.h"
#include "sweep/sweep_totals.h"

namespace tqlab {

struct SweepOptions {
  int threads = 0;  ///< 0: every core this process may use
  /// Called from a worker after each finished work item: (items done, items in all, layer number being worked on).
  std::function<void(std::size_t done, std::size_t total, int layer)> on_progress;
  /// With a model block, after each chunk of each pass (the base is pass 0, then every (run, seed)).
  std::function<void(int pass, int passes, int chunk, int chunks)> on_model_progress;
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

/// The totals of every work item and synthetic trial of `plan` (none without a
/// dump), then, with a model block, its end-to-end passes; `timing` gets the
/// seconds spent (total_seconds is left to the caller). InputError (naming
/// file, tensor, sequence, head, token) on bad data.
SweepTotals compute_sweep_totals(const SweepPlan& plan, const SweepOptions& options, SweepTiming& timing);

/// The synthetic needle trials a plan measures (0 when the test is off).
int synthetic_trial_count(const SweepPlan& plan);

}  // namespace tqlab
