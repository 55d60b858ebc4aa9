// Joining the shards of one sweep (`tqlab merge`, shard_document.h) into the
// totals of the whole sweep, from which the summary and the results document
// are made exactly as an unsharded sweep makes them: the same bytes outside
// "timing", whatever the shard count and whichever kernels each shard ran.
//
// Before anything is added, the shards are checked together (sweep/shard_coverage.h: foreign
// by config hash or data sha256, duplicated, overlapping, missing), and every problem is named.
// The plan is rebuilt from the config the shards carry, read as if it were a
// config in the first shard's folder: the data's headers are read (to know its
// shape), not its tensors, and not hashed again (its size must match; its
// sha256 is the one the shards agree on).
#pragma once

#include <string>
#include <vector>

#include "sweep/sweep_plan.h"
#include "sweep/sweep_results.h"
#include "sweep/sweep_runner.h"
#include "sweep/sweep_totals.h"

namespace tqlab {

struct MergedSweep {
  SweepPlan plan;      ///< plan.config.out is the merged document's path
  SweepTotals totals;  ///< every unit done
  DataIdentity data;
  SweepTiming timing;                 ///< the shards' seconds summed, the largest thread count
  std::vector<std::string> warnings;  ///< shards of other tqlab versions or commits
};

/// Reads and checks the shard documents at `paths` and adds them up for a
/// document to be written at `out`. InputError "merge: ..." naming every
/// problem, on one line.
MergedSweep merge_shards(const std::vector<std::string>& paths, const std::string& out);

}  // namespace tqlab
