// A profile's work (allocate/profile.h) in units that can be measured on any node and put
// together exactly: what `tqlab allocate --shard K/N` cuts and `tqlab merge` joins
// (allocate/profile_shard.h). Unit numbers depend on the candidates, seeds and units alone.
//
//   offline  one unit per distinct sweep run of the profile (offline_profile_runs): a
//            candidate's keys with exact values, or its values with exact keys, over the whole
//            dump for every seed. A unit's shares are taken over its run's whole-dump counts, so
//            the unit is complete in itself; the price is that every shard computes the exact
//            attention of the whole dump once (in an unsharded profile that is 1 part in
//            1 + runs x seeds of the attention work). Cost: 1 per run.
//   model    one unit per pass (unit, candidate, seed): units outer, candidates, seeds inner, the
//            order the unsharded profile measures them in. Every shard runs the base pass once.
//            Cost: the pass's multiply-adds over every chunk from the unit's layer on (the layers
//            before it are the base's: allocate/model_profile.h), and its output layer.
// A work unit fills cells (unit, candidate, seed) of the profile: offline a run fills every unit
// of its role, for each candidate it measures (one run may serve two: fp32 keys and values) and
// every seed; model a pass fills one cell.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "allocate/profile.h"

namespace tqlab {

struct ModelConfig;

/// The offline profile's sweep runs: distinct (k spec, v spec) pairs in the order the candidates
/// first ask for them, and for each candidate the run of its keys and of its values.
struct OfflineRuns {
  std::vector<std::pair<std::string, std::string>> runs;  ///< (k, v)
  std::vector<int> key_run, value_run;                    ///< per candidate: index into runs
};

/// The exact spec the other role keeps while one is measured.
inline constexpr const char* kOfflineExactSpec = "fp32";

OfflineRuns offline_profile_runs(const std::vector<std::string>& candidates);

/// One cell of a profile: candidate `candidate` on unit `unit` for seed index `seed`.
struct ProfileCell {
  int unit = 0;
  int candidate = 0;
  int seed = 0;
};

/// The work units of a profile of `kind` with the candidates, seeds and units of `skeleton`.
int profile_work_count(const Profile& skeleton);

/// The cells work unit `work` fills, in (unit, candidate, seed) order.
std::vector<ProfileCell> profile_work_cells(const Profile& skeleton, int work);

/// Each work unit's cost. Model: `model` is the checkpoint's config, `ctx` and `chunks` the passes' own.
std::vector<std::uint64_t> offline_work_costs(const Profile& skeleton);
std::vector<std::uint64_t> model_work_costs(const Profile& skeleton, const ModelConfig& model, int ctx, int chunks);

/// "run 3 (values at tq:b=3,nc)", "pass 12 (L1.h0.K at tq:b=3,nc, seed 1)": for messages.
std::string describe_profile_work(const Profile& skeleton, int work);

}  // namespace tqlab
