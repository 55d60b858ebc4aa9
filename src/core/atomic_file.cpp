#include "core/atomic_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace tqlab {

namespace {

// pwrite hands the kernel at most this much at once. A call holds the file's
// inode lock throughout, so a second writer waits (spinning) for all of it;
// and on the Zen 5 VM of docs/PERFORMANCE.md, 256 MiB written from one buffer
// took 0.06-0.39 s in 16 MiB calls but a steady 0.06 s in 1 MiB calls.
constexpr std::size_t kMaxWriteCall = std::size_t{1} << 20;

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path, Durability durability)
    : path_(std::move(path)), durability_(durability) {
  temp_path_ = path_ + ".tmp-XXXXXX";
  const int fd = ::mkstemp(temp_path_.data());
  if (fd < 0) fail("cannot create '{}': {}", path_, std::strerror(errno));
  removed_on_stop_.emplace(temp_path_);
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    ::close(fd);
    ::unlink(temp_path_.c_str());
    fail("cannot write '{}': {}", path_, std::strerror(errno));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    ::unlink(temp_path_.c_str());
  }
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    fail("cannot write '{}': {}", path_, std::strerror(errno));
  }
  position_ += bytes.size();
}

void AtomicFileWriter::write_at(std::uint64_t offset, std::span<const std::byte> bytes) const {
  const int fd = ::fileno(file_);
  std::size_t done = 0;
  while (done < bytes.size()) {
    // pwrite may write less than asked (signals, limits of one call): go on from where it stopped.
    const std::size_t piece = std::min(bytes.size() - done, kMaxWriteCall);
    const ssize_t wrote = ::pwrite(fd, bytes.data() + done, piece, static_cast<off_t>(offset + done));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) fail("cannot write '{}': {}", path_, std::strerror(wrote < 0 ? errno : ENOSPC));
    done += static_cast<std::size_t>(wrote);
  }
}

void AtomicFileWriter::start_writeback(std::uint64_t offset, std::uint64_t length) const {
  // Only a hint: a file system that cannot do it still gets everything written by commit()'s fsync.
  if (durability_ != Durability::on_disk) return;
  ::sync_file_range(::fileno(file_), static_cast<off_t>(offset), static_cast<off_t>(length), SYNC_FILE_RANGE_WRITE);
}

void AtomicFileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span(text.data(), text.size())));
}

void AtomicFileWriter::commit() {
  const bool flushed = std::fflush(file_) == 0 && (durability_ != Durability::on_disk || ::fsync(::fileno(file_)) == 0);
  int saved = errno;
  // Without the fsync, close is where a network file system reports a failed write (EIO, EDQUOT).
  const bool closed = std::fclose(file_) == 0;
  if (flushed) saved = errno;
  file_ = nullptr;
  if (!flushed || !closed) {
    ::unlink(temp_path_.c_str());
    fail("cannot write '{}': {}", path_, std::strerror(saved));
  }
  // mkstemp creates 0600; results are ordinary files (0644 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(temp_path_.c_str(), 0666 & ~mask);
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temp_path_.c_str());
    fail("cannot write '{}': {}", path_, std::strerror(rename_errno));
  }
  removed_on_stop_.reset();
}

void write_text_file(const std::string& path, std::string_view text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  AtomicFileWriter writer(path);
  writer.write(text);
  writer.commit();
}

}  // namespace tqlab
