// One call for a sweep run as a job, whole or as a shard, fresh or resumed
// (sweep_job.h): the units it computes, its journal, the timing, the stop
// between units, the check of a re-run against the results it re-runs, and
// the one document it writes atomically (tqlab.sweep/1, or tqlab.shard/1 for a
// shard). The caller plans the sweep, says what to show, and prints.
//
//   SweepJobRequest request{.spec = {shard, resume}, .threads = 4, ...};
//   SweepJobOutcome outcome = run_sweep_job(plan, request);
//   switch (outcome.status) { finished_before, stopped, written }
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "job/sweep_job.h"
#include "job/sweep_rerun.h"
#include "sweep/sweep.h"

namespace tqlab {

struct SweepJobRequest {
  SweepJobSpec spec;  ///< shard, resume
  int threads = 0;    ///< 0: every core this process may use
  /// The command that goes on with this job when it stops or cannot write its output (for messages).
  std::string resume_command;
  /// The config or results it was read from: a re-run's differences from the results it re-runs are warned.
  const SweepConfigSource* source = nullptr;
  /// Polled between units: true stops the job (its journal kept).
  std::function<bool()> stop_requested;
  /// Called once the job knows its units and before any is computed (notes and warnings to show).
  std::function<void(const SweepJob& job)> on_start;
  /// As SweepOptions::on_progress (sweep_runner.h).
  std::function<void(std::size_t done, std::size_t total, int layer)> on_progress;
  /// Called when the computing is over (stopped or not), before anything more is said.
  std::function<void()> on_computed;
  /// What the user should hear of (a re-run's differences).
  std::function<void(const std::string& warning)> on_warning;
};

enum class SweepJobStatus {
  finished_before,  ///< --resume, and the output already held this job's document: nothing done
  stopped,          ///< stopped between units: the journal keeps them
  written,          ///< the output is written
};

struct SweepJobOutcome {
  SweepJobStatus status = SweepJobStatus::written;
  SweepResults results;       ///< a whole sweep's results, written (timing alone for a shard)
  std::size_t units = 0;      ///< units the job computes (its shard's, or all)
  std::size_t done_units = 0;  ///< of those, units done when it stopped
  std::string journal_path;
};

/// Runs the job. InputError as SweepJob's constructor, the sweep and the writer
/// throw them (bad data removes the journal; a failed write keeps it and says
/// how to resume); JournalWriteError when the journal cannot be written.
SweepJobOutcome run_sweep_job(const SweepPlan& plan, const SweepJobRequest& request);

}  // namespace tqlab
