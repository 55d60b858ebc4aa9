#include "job/sweep_job.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/index.h"
#include "core/text.h"
#include "job/shard_document.h"
#include "job/sweep_rerun.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

// What a killed run may leave of an atomic write: OUT.tmp-XXXXXX (core/atomic_file.h).
std::vector<std::filesystem::path> leftover_temporaries(const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path target(out);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tmp-";
  std::vector<fs::path> found;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == prefix.size() + 6 && name.starts_with(prefix) && entry.is_regular_file(error)) {
      found.push_back(entry.path());
    }
  }
  return found;
}

}  // namespace

SweepJob::SweepJob(const SweepPlan& plan, const SweepJobSpec& spec) : plan_(plan), spec_(spec), work_(plan) {
  const std::string& out = plan.config.out;
  const std::string& data_path = plan.config.data.resolved_path;
  if (spec.shard) selection_ = shard_units(plan, work_, *spec.shard);
  selection_size_ = spec.shard ? selection_.size() : static_cast<std::size_t>(work_.count());
  config_hash_ = sweep_config_hash(plan);
  std::error_code error;
  known_data_ = model_input_identity(plan);
  if (known_data_) {
    data_bytes_ = known_data_->bytes;
  } else {
    data_bytes_ = std::filesystem::file_size(data_path, error);
    if (error) fail("'{}': cannot read its size: {}", data_path, error.message());
    digest_ = std::make_unique<DataDigest>(data_path);
  }
  journal_path_ = SweepJournal::path_for(out);
  const JournalIdentity identity{config_hash_, describe_sweep_inputs(plan.config), data_bytes_, work_.count()};

  if (spec.resume) {
    const DataIdentity data = data_identity();
    const bool done = spec.shard ? is_finished_shard(out, *spec.shard, config_hash_, data.bytes, data.sha256)
                                 : is_finished_results(out, config_hash_, data);
    if (done) {
      finished_ = true;
      if (std::filesystem::exists(journal_path_, error)) {
        // Killed between writing the output and removing the journal: the journal is spent.
        JournalContents spent;
        try {
          SweepJournal(journal_path_, identity, true, spent).remove();
        } catch (const InputError&) {
          // Another config's, or in use: not ours to remove.
        }
      }
      return;
    }
  }

  JournalContents found;
  journal_ = std::make_unique<SweepJournal>(journal_path_, identity, spec.resume, found);
  if (!spec.resume) return;
  // The journal's lock is held: no other sweep writes this output, so temporaries are leftovers.
  for (const std::filesystem::path& leftover : leftover_temporaries(out)) {
    if (std::filesystem::remove(leftover, error)) {
      notes_.push_back(fmt::format("removed '{}', left by a run killed while writing", printable(leftover.string())));
    }
  }
  if (found.data_sha256 && *found.data_sha256 != data_identity().sha256) {
    fail(
        "journal '{}' was written for data of sha256 {}…; {} now has {}…: resume with the data that started it, "
        "or remove the journal to start over",
        journal_path_, found.data_sha256->substr(0, 12), describe_sweep_inputs(plan.config),
        data_identity().sha256.substr(0, 12));
  }
  sha256_journalled_ = found.data_sha256.has_value();
  if (!found.version.empty() && (found.version != TQLAB_VERSION || found.git_commit != TQLAB_GIT_COMMIT)) {
    warnings_.push_back(fmt::format("journal '{}' was started by tqlab {} ({}), this is {} ({}): its units are kept",
                                    journal_path_, found.version, found.git_commit, TQLAB_VERSION, TQLAB_GIT_COMMIT));
  }
  if (found.damaged > 0) {
    warnings_.push_back(fmt::format("journal '{}': {} damaged record{} skipped (checksum): computed again",
                                    journal_path_, found.damaged, found.damaged == 1 ? "" : "s"));
  }
  std::vector<char> wanted(static_cast<std::size_t>(work_.count()), spec.shard ? 0 : 1);
  for (int unit : selection_) at(wanted, unit) = 1;
  std::size_t elsewhere = 0;
  for (UnitTotals& unit : found.units) {
    if (at(wanted, unit.unit)) {
      known_units_.push_back(std::move(unit));
    } else {
      ++elsewhere;
    }
  }
  known_ = known_units_.size();
  std::string detail;
  if (found.torn_tail > 0) detail += "; the record being written when it stopped is dropped";
  if (elsewhere > 0) detail += fmt::format("; {} units of other shards are left alone", elsewhere);
  notes_.push_back(
      fmt::format("resuming from '{}': {} of {} units done{}", journal_path_, known_, selection_size_, detail));
}

SweepJob::~SweepJob() = default;

void SweepJob::attach(SweepOptions& options, std::function<bool()> stop) {
  if (spec_.shard) options.units = selection_;
  options.add_known_units = [this](SweepTotals& totals) {
    for (UnitTotals& unit : known_units_) {
      try {
        add_unit_totals(totals, work_, std::move(unit));
      } catch (const InputError& error) {
        fail("journal '{}': {}: remove it to start over", journal_path_, error.what());
      }
    }
    known_units_.clear();
  };
  options.on_unit_done = [this](const UnitTotals& unit) {
    journal_->append_unit(unit);
    ++journalled_;
    if (!sha256_journalled_ && (known_data_ || digest_->ready())) {
      journal_->append_data_sha256(data_identity().sha256);
      sha256_journalled_ = true;
    }
  };
  options.stop_requested = std::move(stop);
}

DataIdentity SweepJob::data_identity() {
  return known_data_ ? *known_data_ : DataIdentity{data_bytes_, digest_->get()};
}

void SweepJob::write_shard(const SweepTotals& totals, const SweepTiming& timing) {
  const DataIdentity data = data_identity();
  AtomicFileWriter writer(plan_.config.out);
  writer.write(shard_document_json(plan_, *spec_.shard, selection_, totals, data, timing).dump() + "\n");
  writer.commit();
}

void SweepJob::complete() {
  if (journal_) journal_->remove();
}

void SweepJob::abandon() {
  if (journal_) journal_->remove();
}

}  // namespace tqlab
