#include "job/run_sweep_job.h"

#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "sweep/sweep_results.h"

namespace tqlab {
namespace {

// Writing the output: a failure (disk full, folder gone) leaves the journal for --resume.
template <typename Write>
void write_keeping_journal(const SweepJob& job, const SweepJobRequest& request, const Write& write) {
  try {
    write();
  } catch (const InputError& error) {
    std::error_code missing;
    if (!std::filesystem::exists(job.journal_path(), missing)) throw;
    fail("{}; the computed units are kept in '{}': make room, then run: {}", error.what(), job.journal_path(),
         request.resume_command);
  }
}

// The job's units computed into totals (a shard's) or results (the whole sweep's). False when stopped.
bool compute(const SweepPlan& plan, const SweepJobRequest& request, SweepJob& job, SweepTotals& shard_totals,
             SweepResults& results) {
  SweepOptions options;
  options.threads = request.threads;
  options.on_progress = request.on_progress;
  job.attach(options, request.stop_requested);
  try {
    if (request.spec.shard) {
      shard_totals = compute_timed_sweep_totals(plan, options, results.timing);
    } else {
      results = run_sweep(plan, options);
    }
  } catch (const SweepStopped&) {
    return false;
  } catch (const JournalWriteError&) {
    throw;  // the journal keeps what was done
  } catch (...) {
    job.abandon();  // bad data: no resume can mend it
    throw;
  }
  return true;
}

}  // namespace

SweepJobOutcome run_sweep_job(const SweepPlan& plan, const SweepJobRequest& request) {
  // The journal beside the output proves the folder writable before any compute.
  SweepJob job(plan, request.spec);
  SweepJobOutcome outcome;
  outcome.units = job.units();
  outcome.journal_path = job.journal_path();
  if (job.finished()) {
    outcome.status = SweepJobStatus::finished_before;
    return outcome;
  }
  if (request.on_start) request.on_start(job);
  SweepTotals shard_totals;
  const bool computed = compute(plan, request, job, shard_totals, outcome.results);
  if (request.on_computed) request.on_computed();
  if (!computed) {
    outcome.status = SweepJobStatus::stopped;
    outcome.done_units = job.done_units();
    return outcome;
  }
  if (request.source != nullptr && request.on_warning) {
    for (const std::string& difference : rerun_differences(*request.source, job.data_identity())) {
      request.on_warning(difference);
    }
  }
  if (request.spec.shard) {
    write_keeping_journal(job, request, [&] { job.write_shard(shard_totals, outcome.results.timing); });
  } else {
    write_keeping_journal(job, request, [&] {
      AtomicFileWriter writer(plan.config.out);
      writer.write(sweep_results_json(plan, outcome.results, job.data_identity()).dump(1) + "\n");
      writer.commit();
    });
  }
  job.complete();
  outcome.done_units = job.units();
  outcome.status = SweepJobStatus::written;
  return outcome;
}

}  // namespace tqlab
