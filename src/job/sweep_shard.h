// Cutting a sweep into N shards (`tqlab sweep --shard K/N`): deterministic,
// contiguous, balanced by cost.
//
// Shard K of N (K = 1..N, as `split -n K/N` counts) holds a contiguous range
// of work units (work_units.h: items layer by layer, then the synthetic
// needle's trials), for every (run, seed). So the exact attention of an item
// is computed once in the whole cluster, and each node reads only its few
// layers' pages.
//
// The cut depends only on the config and the data's shape, never on timing or
// on hashing: the same K/N gives the same units on every node and every
// resubmission. A unit's cost estimates the work it takes:
//   item:            q heads of its group x the (query, key) pairs its chunks
//                    attend (n (n + 1) / 2 per chunk of n tokens when causal,
//                    n^2 otherwise; 0 without attention) + its tokens;
//   synthetic trial: kSyntheticNeedleKeys x kSyntheticNeedleDim (a trial draws
//                    4096 keys of 128 values and quantizes them: measured at
//                    about 0.8x this many attended pairs' time);
//   model unit:      one chunk's forward through the model in multiply-adds
//                    (its output layer twice for a run), over the
//                    2 head_dim (1 + runs x seeds) an item spends per pair.
// With C the total cost and P_u the cost of the units before u, unit u goes to
// the shard its midpoint falls in: floor(N (2 P_u + c_u) / (2 C)) + 1. Each
// shard's cost is then within one unit's cost of C / N. A shard is empty when
// N exceeds the units or one unit outweighs C / N; an empty shard is a valid
// shard and merges like any other.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sweep/sweep_plan.h"
#include "sweep/work_units.h"

namespace tqlab {

/// Shard `index` of `count`, index from 1.
struct ShardSpec {
  int index = 1;
  int count = 1;

  /// "K/N".
  std::string text() const;
  bool operator==(const ShardSpec&) const = default;
};

/// Largest shard count accepted.
inline constexpr int kMaxShards = 1 << 20;

/// "K/N" with 1 <= K <= N <= kMaxShards; InputError "--shard 'TEXT': ..." otherwise.
ShardSpec parse_shard_spec(std::string_view text);

/// The estimated cost of `unit` (see above).
std::uint64_t unit_cost(const SweepPlan& plan, const WorkUnits& units, int unit);

/// For each of a sequence of work units of cost `costs`, the shard (1..count) whose range holds it
/// by the midpoint rule above: non-decreasing. Any kind of work (a sweep's, an allocation
/// profile's) is cut by it.
std::vector<int> assign_shards_by_cost(const std::vector<std::uint64_t>& costs, int count);

/// For each unit, the shard (1..count) that holds it: non-decreasing.
std::vector<int> assign_shards(const SweepPlan& plan, const WorkUnits& units, int count);

/// The units shard `shard` holds, ascending.
std::vector<int> shard_units(const SweepPlan& plan, const WorkUnits& units, const ShardSpec& shard);

}  // namespace tqlab
