// The sweep: every run of a plan over the dump, measured and summarized.
//
//   plan (sweep_plan.h) -> work items (sweep_items.h), each measured for every
//   (run, seed) (sweep_item.h) on parallel workers (sweep_runner.h) -> totals
//   (sweep_totals.h) -> means, standard errors, per-layer and per-head values
//   (sweep_summary.h) -> the results document (sweep_results.h).
//
// The same config and seeds give the same results for any thread count, byte
// for byte outside the timing. The metrics are defined in sweep_summary.h and
// docs/SWEEP.md#metrics.
#pragma once

#include "sweep/sweep_plan.h"
#include "sweep/sweep_runner.h"
#include "sweep/sweep_summary.h"

namespace tqlab {

/// Runs the sweep. InputError (naming file, tensor, sequence, head, token) on
/// bad data; nothing is returned then.
SweepResults run_sweep(const SweepPlan& plan, const SweepOptions& options);

/// compute_sweep_totals (sweep_runner.h) with timing.total_seconds set to its wall
/// time: what run_sweep and a shard of the sweep both measure.
SweepTotals compute_timed_sweep_totals(const SweepPlan& plan, const SweepOptions& options, SweepTiming& timing);

}  // namespace tqlab
