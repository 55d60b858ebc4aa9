// Writes a file so that readers never see it half-written: the bytes go to
// a temporary file beside the target, which is renamed over the target only
// when commit() succeeds. A writer destroyed without commit() removes the
// temporary file (an exception on the way leaves the old target untouched).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace tqlab {

class AtomicFileWriter {
 public:
  /// Opens a temporary file next to `path`. Throws InputError when it cannot.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  /// Writes `bytes` at byte `offset` of the file (pwrite): safe from several
  /// threads at once; does not move position().
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes) const;
  /// Asks the kernel to start writing [offset, offset + length) to disk now
  /// (sync_file_range, no waiting), so that commit()'s fsync has less left to do.
  void start_writeback(std::uint64_t offset, std::uint64_t length) const;
  /// Bytes written so far.
  std::size_t position() const { return position_; }
  /// Flushes, syncs and renames the temporary file to the target.
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  std::size_t position_ = 0;
};

/// Writes `text` to `path` atomically, or to stdout when path is "-".
void write_text_file(const std::string& path, std::string_view text);

}  // namespace tqlab
