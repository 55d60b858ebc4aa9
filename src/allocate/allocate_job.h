// One call for `tqlab allocate`'s work, whole or as a profile shard: the profile
// (from --profile-file, the cache, or measured and cached), the exact solve at the
// budget, --calibrate and --verify, and the one document written atomically
// (tqlab.allocation/1, or tqlab.profile-shard/1 for a shard). The caller parses,
// opens the config and the model, shows progress and notes, and prints.
//
//   AllocateJobRequest request{.kind = ProfileKind::model, .budget = "3.25", ...};
//   AllocateJobOutcome outcome = run_allocate_job(config, model.get(), request, writer);
//   if (outcome.report) print(allocation_table(*outcome.report));
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "allocate/allocation_document.h"
#include "allocate/objective.h"
#include "allocate/profile.h"
#include "core/atomic_file.h"
#include "job/sweep_shard.h"
#include "sweep/sweep_config.h"
#include "sweep/sweep_model.h"

namespace tqlab {

struct AllocateJobRequest {
  std::string config_path;  ///< as given, recorded in the document
  ProfileKind kind = ProfileKind::model;
  Granularity granularity = Granularity::layer_head;
  Objective objective;
  std::vector<std::string> candidates;  ///< canonical (allocate/candidates.h)
  std::string budget;                   ///< as resolve_budget reads it; unused for a shard
  std::optional<ShardSpec> shard;       ///< measure and write this part of the profile only
  bool calibrate = false, verify = false;
  std::string profile_file;  ///< the profile to solve, instead of the cache or a measurement
  /// An engine whose plans are solved too (allocate/engine_shapes.h), "" for none; `engine_types`
  /// its name of each candidate (candidates are tqlab's specs of its cache types).
  std::string engine;
  std::vector<std::string> engine_types;
  bool use_cache = true;     ///< read a cached profile, and cache one measured
  std::string cache_folder;  ///< where profiles are cached ("": the working folder)
  bool reuse_prefix = true;  ///< model profile: passes start from the deepest layer they share
  int threads = 0;           ///< 0: every core this process may use
  /// A long step begins ("offline profile", "model profile", "verify"); "" when it ends.
  std::function<void(const std::string& step)> on_step;
  /// Within the step: done of total.
  std::function<void(std::size_t done, std::size_t total)> on_progress;
  /// What was done, for a user who did not ask for --quiet ("profile from FILE", timings).
  std::function<void(const std::string& note)> on_note;
  /// Called once the allocation and the engine's plan are settled (with --verify, after the measurement
  /// that may choose another plan), before the document is written: what it throws leaves nothing
  /// written (empty: not called).
  std::function<void(const AllocationReport& report)> on_solved;
};

struct AllocateJobOutcome {
  std::optional<AllocationReport> report;  ///< written; null for a shard
};

/// Runs the job and writes its document through `writer`, committed.
/// InputError: a --profile-file or cache of another config (the cache is warned
/// about and measured again instead), --calibrate without a model, a bad budget.
AllocateJobOutcome run_allocate_job(const SweepConfig& config, const SweepModel* model,
                                    const AllocateJobRequest& request, AtomicFileWriter& writer);

}  // namespace tqlab
