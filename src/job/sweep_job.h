// A sweep as a job that may be cut into shards, stopped, killed and resumed:
// which units it computes (sweep_shard.h), which it already has (its journal,
// sweep_journal.h), the data's identity, and its output (plan.config.out).
//
//   SweepJob job(plan, {shard, resume});
//   if (job.finished()) return;           // --resume, and the output is this job's, done
//   job.attach(options, stop);            // units, known units, journalling, stop polling
//   totals = compute_sweep_totals(plan, options, timing);   (or run_sweep)
//   write the document (job.write_shard for a shard), then job.complete();
//
// The output is written only at the end, atomically; until then the folder
// holds nothing of the job but its journal. A stopped job, or one that could
// not write its journal or output, keeps the journal for --resume; a job that
// fails on its data (abandon) removes it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "job/sweep_identity.h"
#include "job/sweep_journal.h"
#include "job/sweep_shard.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_results.h"
#include "sweep/sweep_runner.h"
#include "sweep/work_units.h"

namespace tqlab {

struct SweepJobSpec {
  std::optional<ShardSpec> shard;  ///< nullopt: the whole sweep
  bool resume = false;             ///< go on from the journal (and keep a finished output)
};

class SweepJob {
 public:
  /// InputError: a journal without --resume, or of another config or data
  /// (naming it), an output folder that cannot be written.
  SweepJob(const SweepPlan& plan, const SweepJobSpec& spec);
  ~SweepJob();

  /// --resume found the output already holding this job's document.
  bool finished() const { return finished_; }
  const std::string& journal_path() const { return journal_path_; }
  /// Units this job computes (its shard's, or all).
  std::size_t units() const { return selection_size_; }
  /// Of those, units the journal had, and units done so far (the journal's and those journalled since).
  std::size_t known_units() const { return known_; }
  std::size_t done_units() const { return known_ + journalled_.load(); }
  /// What to tell the user before the work starts (a resumed journal, a leftover removed, other builds).
  const std::vector<std::string>& notes() const { return notes_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  /// Sets options.units, add_known_units, on_unit_done and stop_requested (from `stop`).
  void attach(SweepOptions& options, std::function<bool()> stop);

  /// The data's size and sha256 (waits for the hash); without a data file, the
  /// model dump's or the model's and tokens' (sweep_identity.h).
  DataIdentity data_identity();

  /// Writes the shard document (a shard job) from the totals.
  void write_shard(const SweepTotals& totals, const SweepTiming& timing);

  /// The output is written: the journal goes.
  void complete();
  /// The job cannot be resumed into a document (bad data): the journal goes.
  void abandon();

 private:
  const SweepPlan& plan_;
  SweepJobSpec spec_;
  WorkUnits work_;
  std::vector<int> selection_;  // empty: every unit
  std::size_t selection_size_ = 0;
  std::string config_hash_;
  std::uint64_t data_bytes_ = 0;
  std::optional<DataIdentity> known_data_;  // a sweep without a data file (sweep_identity.h)
  std::unique_ptr<DataDigest> digest_;      // of the data file, otherwise
  std::string journal_path_;
  std::unique_ptr<SweepJournal> journal_;
  std::vector<UnitTotals> known_units_;
  std::size_t known_ = 0;
  std::atomic<std::size_t> journalled_{0};
  bool sha256_journalled_ = false;
  bool finished_ = false;
  std::vector<std::string> notes_, warnings_;
};

}  // namespace tqlab
