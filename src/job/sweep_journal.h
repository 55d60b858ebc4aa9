// The journal of a sweep in progress: an append-only file beside the output
// (OUT.journal) holding every finished unit's totals (work_units.h), so that
// a sweep killed at any moment goes on from where it was with --resume and
// writes the very document an uninterrupted run writes.
//
// Format, tqlab.journal/1: one record per line, each in an envelope
//   {"record":RECORD,"crc32":"xxxxxxxx"}
// with zlib's CRC-32 of RECORD's bytes exactly as they stand in the line.
// RECORD is compact JSON, one of:
//   first line: {"schema":"tqlab.journal/1","config_hash":H,"data":{"path","bytes"},
//                "model":null,"units":U,"tqlab":{"version","git_commit"}}
//   {"config_hash":H,"data_sha256":S}   once the data's sha256 is known
//   {"config_hash":H,"unit":UNIT}       one per finished unit: totals_json.h's
//                                       form, with its KL parts ("kl")
// H is the config hash (sweep_identity.h). Each record goes to the file in one
// write(2) and is fsync'd before the sweep counts its unit done: after a
// SIGKILL (or a power loss) the file holds every unit reported done, and at
// most one torn last line. Units are numbered by the config and the data's
// shape alone, so a journal serves any --threads and any --shard slicing.
//
// Reading (--resume): a last line cut short or failing its checksum is the
// record of a process killed while writing it: dropped, and the file cut back
// before appending. A damaged line before the last is skipped with a warning
// (its unit is computed again). A journal of another config or of data of
// another size is refused (InputError naming both). A record that passes its
// checksum but does not read as a unit is refused, naming its line.
//
// While a journal is open, the file holds an exclusive flock: a second sweep
// writing the same output is refused instead of interleaving records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "sweep/work_units.h"

namespace tqlab {

inline constexpr std::string_view kJournalSchema = "tqlab.journal/1";

/// An error writing the journal (disk full, folder removed): the records
/// written before are intact and a later --resume can use them.
class JournalWriteError : public InputError {
 public:
  using InputError::InputError;
};

/// What a journal is the journal of.
struct JournalIdentity {
  std::string config_hash;
  std::string data_path;  ///< what the sweep reads, for messages (describe_sweep_inputs)
  std::uint64_t data_bytes = 0;
  int units = 0;  ///< units of the whole sweep
};

/// What an existing journal held.
struct JournalContents {
  std::vector<UnitTotals> units;           ///< in file order, each unit once
  std::optional<std::string> data_sha256;  ///< when its record was written
  std::string version, git_commit;         ///< of the tqlab that started it
  int torn_tail = 0;                       ///< records dropped at the end (0 or 1)
  int damaged = 0;                         ///< damaged lines skipped before the end
  int repeated = 0;                        ///< records of a unit already read (the first is kept)
};

class SweepJournal {
 public:
  /// OUT.journal.
  static std::string path_for(const std::string& out);

  /// Opens the journal at `path` for a sweep of `identity`. A missing (or
  /// empty) file is started afresh. An existing one is read into `found` when
  /// `resume`, else refused: InputError saying to add --resume or remove it.
  SweepJournal(std::string path, const JournalIdentity& identity, bool resume, JournalContents& found);
  ~SweepJournal();
  SweepJournal(const SweepJournal&) = delete;
  SweepJournal& operator=(const SweepJournal&) = delete;

  const std::string& path() const { return path_; }

  /// Appends a finished unit (with its KL parts), durably. JournalWriteError on failure,
  /// the file then cut back to its previous records.
  void append_unit(const UnitTotals& unit);
  /// Appends the data's sha256.
  void append_data_sha256(const std::string& sha256);

  /// Deletes the file (the sweep's document is written).
  void remove();

 private:
  void append_record(const std::string& record);

  std::string path_;
  std::string config_hash_;
  int fd_ = -1;
  std::uint64_t size_ = 0;  // bytes of complete records
};

/// The envelope of one record: {"record":RECORD,"crc32":"xxxxxxxx"} and a newline.
std::string journal_line(std::string_view record);

/// RECORD of one line (without its newline) whose envelope and checksum hold; nullopt otherwise.
std::optional<std::string_view> journal_record(std::string_view line);

}  // namespace tqlab
