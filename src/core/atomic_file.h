// Writes a file so that readers never see it half-written: the bytes go to
// a temporary file beside the target, which is renamed over the target only
// when commit() succeeds. A writer destroyed without commit() removes the
// temporary file (an exception on the way leaves the old target untouched), and so
// does a stop signal (core/stop_signals.h: exit_on_stop_signals).
//
// Durability is the caller's choice. Results and reports are small: they
// are fsynced before the rename, so a file under its name survives a power
// loss. Bulk tensor outputs (roundtrip) are deterministic and can be remade,
// and on a slow disk the fsync costs more than the whole job: by default they
// are renamed complete from the page cache, as cp and rsync leave theirs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/stop_signals.h"

namespace tqlab {

/// What commit() waits for before it renames the file into place.
enum class Durability {
  /// fsync: the bytes are on disk before the file has its name, and survive a power loss.
  on_disk,
  /// No fsync: every process sees the whole file once it has its name; a power
  /// loss within the kernel's writeback delay (about 30 s) may leave it
  /// incomplete (short, or with ranges of zeros).
  page_cache,
};

class AtomicFileWriter {
 public:
  /// Opens a temporary file next to `path`. Throws InputError when it cannot.
  explicit AtomicFileWriter(std::string path, Durability durability = Durability::on_disk);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  /// Writes `bytes` at byte `offset` of the file (pwrite): safe from several
  /// threads at once; does not move position().
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes) const;
  /// With Durability::on_disk, asks the kernel to start writing [offset, offset + length)
  /// (length 0: to the end of the file) to disk now (sync_file_range, no waiting), so that
  /// commit()'s fsync has less left to do. Does nothing with Durability::page_cache.
  void start_writeback(std::uint64_t offset, std::uint64_t length) const;
  /// Bytes written so far.
  std::size_t position() const { return position_; }
  Durability durability() const { return durability_; }
  /// Flushes, syncs (Durability::on_disk) and renames the temporary file to the target.
  void commit();

 private:
  std::string path_;
  Durability durability_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  std::size_t position_ = 0;
  std::optional<RemovedOnStop> removed_on_stop_;  ///< the temporary file, until commit()
};

/// Writes `text` to `path` atomically, or to stdout when path is "-".
void write_text_file(const std::string& path, std::string_view text);

}  // namespace tqlab
