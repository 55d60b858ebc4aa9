// Measuring one work item: one (layer, sequence, kv head) slab of K and V and
// the queries of its q heads, for every (run, seed) of a sweep.
//
// Per item, each distinct quantization (role, quantizer, seed) is made once
// and shared by the runs that use it; the exact attention of each (q head,
// chunk, query block) is computed once and every run is measured against it
// (metrics/attention_block.h); planted needles are measured on the trials
// that fall in the item (metrics/needle.h).
#pragma once

#include <vector>

#include "sweep/sweep_plan.h"
#include "sweep/sweep_totals.h"

namespace tqlab {

/// Seconds one item spent, by kind of work.
struct ItemSeconds {
  double read = 0, quantize = 0, attention = 0, needle = 0;
};

struct ItemMeasurement {
  ItemTotals totals;
  /// Per (run, seed), per q head of the group: every measured query's attention KL
  /// (for the tails; empty without attention).
  std::vector<std::vector<std::vector<double>>> kl;
  ItemSeconds seconds;
};

/// Measures `item` for every (run, seed) of `plan`. InputError naming the file,
/// tensor, sequence, head and token on bad data.
ItemMeasurement measure_item(const SweepPlan& plan, const RunSeeds& run_seeds, const WorkItem& item);

/// The synthetic needle test's trial `trial` for every (run, seed) (sweep_totals.h).
std::vector<SyntheticOutcome> measure_synthetic_trial(const SweepPlan& plan, const RunSeeds& run_seeds, int trial);

}  // namespace tqlab
