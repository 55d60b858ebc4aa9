// A read-only memory map of a whole file.
//
// Opening checks that the path exists, is a regular file and is readable;
// each failure is an InputError naming the path. Pages are mapped, not read:
// a tensor is touched only when converted, and release() gives its pages back
// (madvise MADV_DONTNEED) so a sweep's resident memory does not grow with
// the number of layers. A reader that streams through a file once can copy
// pieces out with read() instead, which maps nothing: on the VMs of
// docs/PERFORMANCE.md, reading 256 MiB through the map took 0.14-0.16 s and
// pread into one 256 KiB buffer 0.04 s.
//
// A MappedFile can also hold bytes already in memory (the fuzz targets and
// tests parse inputs that never were files): the readers then see exactly
// those bytes, and a read past their end is a heap overflow the sanitizers
// catch, where a page-rounded map would hide it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tqlab {

class MappedFile {
 public:
  /// Maps `path` read-only. Throws InputError when it cannot.
  explicit MappedFile(std::string path);
  /// Holds `contents` as if they were the file `name` (release() does nothing).
  MappedFile(std::string name, std::vector<std::byte> contents);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  /// All bytes of the file (empty for an empty file).
  std::span<const std::byte> bytes() const { return {data_, static_cast<std::size_t>(size_)}; }

  /// Drops the resident pages covering [offset, offset + length): they are
  /// read again from the file if touched later.
  void release(std::uint64_t offset, std::uint64_t length) const;

  /// Copies bytes [offset, offset + out.size()) into `out` (pread: the map is
  /// not touched). InputError naming the file when the range passes its end or
  /// the read fails.
  void read(std::uint64_t offset, std::span<std::byte> out) const;

 private:
  std::string path_;
  int fd_ = -1;  ///< open for read() (-1 for bytes held in memory)
  const std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
  std::vector<std::byte> owned_;  ///< the contents of an in-memory file (else empty)
};

}  // namespace tqlab
