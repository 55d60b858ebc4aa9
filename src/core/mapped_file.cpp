#include "core/mapped_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace tqlab {

MappedFile::MappedFile(std::string path) : path_(std::move(path)) {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open '{}': {}", path_, std::strerror(errno));
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int saved = errno;
    ::close(fd);
    fail("cannot stat '{}': {}", path_, std::strerror(saved));
  }
  if (S_ISDIR(status.st_mode)) {
    ::close(fd);
    fail("'{}' is a directory, not a file", path_);
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    fail("'{}' is not a regular file", path_);
  }
  size_ = static_cast<std::uint64_t>(status.st_size);
  if (size_ > 0) {
    void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const int saved = errno;
      ::close(fd);
      fail("cannot map '{}': {}", path_, std::strerror(saved));
    }
    data_ = static_cast<const std::byte*>(mapped);
  }
  fd_ = fd;
}

MappedFile::MappedFile(std::string name, std::vector<std::byte> contents)
    : path_(std::move(name)), owned_(std::move(contents)) {
  size_ = owned_.size();
  if (size_ > 0) data_ = owned_.data();
}

MappedFile::~MappedFile() {
  if (data_ != nullptr && owned_.empty()) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::read(std::uint64_t offset, std::span<std::byte> out) const {
  if (offset > size_ || out.size() > size_ - offset) {
    fail("'{}': cannot read bytes [{}, {}) of a {}-byte file", path_, offset, offset + out.size(), size_);
  }
  if (fd_ < 0) {
    if (!out.empty()) std::memcpy(out.data(), data_ + offset, out.size());
    return;
  }
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    // 0: the file became shorter since it was opened.
    if (got <= 0) fail("cannot read '{}': {}", path_, got < 0 ? std::strerror(errno) : "the file was truncated");
    done += static_cast<std::size_t>(got);
  }
}

void MappedFile::release(std::uint64_t offset, std::uint64_t length) const {
  if (data_ == nullptr || !owned_.empty() || length == 0 || offset >= size_) return;
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  // Only whole pages inside the range can be dropped without touching neighbours'.
  const std::uint64_t begin = (offset + page - 1) / page * page;
  const std::uint64_t end = std::min(offset + length, size_) / page * page;
  if (end <= begin) return;
  ::madvise(const_cast<std::byte*>(data_) + begin, end - begin, MADV_DONTNEED);
}

}  // namespace tqlab
