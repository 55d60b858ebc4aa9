#include "job/sweep_journal.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/index.h"
#include "core/text.h"
#include "io/json_reader.h"
#include "job/totals_json.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kPrefix = "{\"record\":";
constexpr std::string_view kCrcKey = ",\"crc32\":\"";
constexpr std::size_t kCrcDigits = 8;
constexpr std::size_t kSuffixSize = kCrcKey.size() + kCrcDigits + 2;  // ,"crc32":"xxxxxxxx"}

std::string crc32_hex(std::string_view bytes) {
  const uLong crc = crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
  return fmt::format("{:08x}", static_cast<std::uint32_t>(crc));
}

std::string short_hash(const std::string& hash) { return hash.substr(0, 12); }

// Makes the new file's name durable too (its folder's entry).
void sync_folder_of(const std::string& path) {
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string read_all(int fd, const std::string& path) {
  std::string text;
  char buffer[1 << 16];
  off_t offset = 0;
  while (true) {
    const ssize_t got = ::pread(fd, buffer, sizeof buffer, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("journal '{}': cannot be read: {}", path, std::strerror(errno));
    if (got == 0) return text;
    text.append(buffer, static_cast<std::size_t>(got));
    offset += got;
  }
}

std::string header_record(const JournalIdentity& identity) {
  Json header;
  header["schema"] = kJournalSchema;
  header["config_hash"] = identity.config_hash;
  header["data"] = {{"path", json_text(identity.data_path)}, {"bytes", identity.data_bytes}};
  header["model"] = nullptr;
  header["units"] = identity.units;
  header["tqlab"] = {{"version", TQLAB_VERSION}, {"git_commit", TQLAB_GIT_COMMIT}};
  return header.dump();
}

// Checks the header line against the sweep's identity.
void check_header(const std::string& path, std::string_view record, const JournalIdentity& identity,
                  JournalContents& found) {
  const auto not_a_journal = [&] {
    fail("'{}' is not a {} journal (its first line is no journal header): remove it to start over", path,
         kJournalSchema);
  };
  nlohmann::json header;
  try {
    header = parse_json_text(record, path, "journal");
  } catch (const InputError&) {
    not_a_journal();
  }
  const JsonReader root(header, path, "line 1", "journal");
  if (!root.is_object() || !root.has("schema") || root.at("schema").value() != kJournalSchema) not_a_journal();
  const std::string hash = root.at("config_hash").as_string();
  if (hash != identity.config_hash) {
    fail(
        "journal '{}' was written by another config (config hash {}…; this sweep's is {}…): resume with the config "
        "that started it, or remove the journal to start over",
        path, short_hash(hash), short_hash(identity.config_hash));
  }
  const JsonReader data = root.at("data");
  const std::uint64_t bytes = data.at("bytes").as_unsigned();
  if (bytes != identity.data_bytes) {
    fail(
        "journal '{}' was written for data of {} bytes ({}); {} has {}: resume with the data that started it, or "
        "remove the journal to start over",
        path, bytes, printable(data.at("path").as_string()), identity.data_path, identity.data_bytes);
  }
  const int units = static_cast<int>(root.at("units").as_integer(0, std::numeric_limits<int>::max()));
  if (units != identity.units) {
    fail("journal '{}' is of a sweep of {} units, this one has {}: remove it to start over", path, units,
         identity.units);
  }
  const JsonReader tqlab = root.at("tqlab");
  found.version = tqlab.at("version").as_string();
  found.git_commit = tqlab.at("git_commit").as_string();
}

}  // namespace

std::string journal_line(std::string_view record) {
  std::string line;
  line.reserve(kPrefix.size() + record.size() + kSuffixSize + 1);
  line += kPrefix;
  line += record;
  line += kCrcKey;
  line += crc32_hex(record);
  line += "\"}\n";
  return line;
}

std::optional<std::string_view> journal_record(std::string_view line) {
  if (line.size() < kPrefix.size() + kSuffixSize || !line.starts_with(kPrefix) || !line.ends_with("\"}")) {
    return std::nullopt;
  }
  const std::string_view suffix = line.substr(line.size() - kSuffixSize);
  if (!suffix.starts_with(kCrcKey)) return std::nullopt;
  const std::string_view record = line.substr(kPrefix.size(), line.size() - kPrefix.size() - kSuffixSize);
  if (crc32_hex(record) != suffix.substr(kCrcKey.size(), kCrcDigits)) return std::nullopt;
  return record;
}

std::string SweepJournal::path_for(const std::string& out) { return out + ".journal"; }

namespace {

// Opens (creating) the journal and locks it for this process: InputError when another sweep holds it.
int open_locked(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) fail("cannot create the journal '{}': {}", path, std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      fail(
          "the journal '{}' is in use by another tqlab sweep writing the same output: let it finish, or give this "
          "one another --out",
          path);
    }
    fail("cannot lock the journal '{}': {}", path, std::strerror(error));
  }
  return fd;
}

// A record after the header: the data's hash, or a finished unit (kept once; `seen` marks units read).
void read_body_record(const std::string& path, std::string_view record, int line_number,
                      const JournalIdentity& identity, std::vector<char>& seen, JournalContents& found) {
  const std::string where = fmt::format("line {}", line_number);
  const nlohmann::json value = parse_json_text(record, path, "journal");
  const JsonReader reader(value, path, where, "journal");
  if (reader.at("config_hash").as_string() != identity.config_hash) {
    reader.fail("a record of another config (config hash {}…)", short_hash(reader.at("config_hash").as_string()));
  }
  if (const auto sha256 = reader.find("data_sha256")) {
    found.data_sha256 = sha256->as_string();
    return;
  }
  UnitTotals unit = read_unit_totals(reader.at("unit"));
  if (unit.unit >= identity.units) reader.fail("unit {} of a sweep of {} units", unit.unit, identity.units);
  if (at(seen, unit.unit)) {
    ++found.repeated;
  } else {
    at(seen, unit.unit) = 1;
    found.units.push_back(std::move(unit));
  }
}

// Reads a journal's text into `found`; returns the bytes of complete records (and damaged lines)
// to keep: a torn last line — the record a killed process was writing — is cut off.
std::size_t read_records(const std::string& path, const std::string& text, const JournalIdentity& identity,
                         JournalContents& found) {
  std::vector<char> seen(static_cast<std::size_t>(identity.units));
  std::size_t keep = 0;
  std::size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    ++line_number;
    const std::size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    const std::string_view line = std::string_view(text).substr(start, (complete ? end : text.size()) - start);
    const std::size_t next = complete ? end + 1 : text.size();
    const std::optional<std::string_view> record = complete ? journal_record(line) : std::nullopt;
    if (!record) {
      // A torn first line must still look like a journal's header: nothing else is cut off.
      const bool journal_like = line_number > 1 || line.starts_with(std::string(kPrefix) + "{\"schema\":\"" +
                                                                    std::string(kJournalSchema) + "\"");
      if (next >= text.size() && journal_like) {
        found.torn_tail = 1;
        break;
      }
      if (line_number == 1) check_header(path, line, identity, found);  // names what it is not
      ++found.damaged;
    } else if (line_number == 1) {
      check_header(path, *record, identity, found);
    } else {
      read_body_record(path, *record, line_number, identity, seen, found);
    }
    keep = next;
    start = next;
  }
  return keep;
}

}  // namespace

SweepJournal::SweepJournal(std::string path, const JournalIdentity& identity, bool resume, JournalContents& found)
    : path_(std::move(path)), config_hash_(identity.config_hash) {
  fd_ = open_locked(path_);
  bool created = false;
  try {
    const std::string text = read_all(fd_, path_);
    created = text.empty();
    if (!text.empty() && !resume) {
      fail(
          "'{}' holds the finished units of an interrupted sweep: add --resume to go on from them, or remove it "
          "to start over",
          path_);
    }
    const std::size_t keep = read_records(path_, text, identity, found);
    if (keep == 0) {
      // A new journal (or one killed before its header was complete): the header first.
      if (::ftruncate(fd_, 0) != 0) fail("cannot write the journal '{}': {}", path_, std::strerror(errno));
      size_ = 0;
      append_record(header_record(identity));
      sync_folder_of(path_);
      found = JournalContents{};
      return;
    }
    if (keep < text.size() && ::ftruncate(fd_, static_cast<off_t>(keep)) != 0) {
      fail("cannot cut the torn last record off the journal '{}': {}", path_, std::strerror(errno));
    }
    size_ = keep;
  } catch (...) {
    if (created) ::unlink(path_.c_str());
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

SweepJournal::~SweepJournal() {
  if (fd_ >= 0) ::close(fd_);
}

void SweepJournal::append_record(const std::string& record) {
  const std::string line = journal_line(record);
  const auto undo = [&](int error, const char* doing) {
    // Whatever part of the line reached the file goes: the records before stay whole. (Should
    // that fail too, the torn line is dropped when the journal is read.)
    [[maybe_unused]] const int cut = ::ftruncate(fd_, static_cast<off_t>(size_));
    throw JournalWriteError(fmt::format(
        "cannot {} the journal '{}': {}; the units it holds are kept: make room (or put the folder back), then run "
        "the same command with --resume",
        doing, path_, std::strerror(error)));
  };
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t wrote = ::pwrite(fd_, line.data() + done, line.size() - done, static_cast<off_t>(size_ + done));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) undo(wrote < 0 ? errno : ENOSPC, "write");
    done += static_cast<std::size_t>(wrote);
  }
  if (::fsync(fd_) != 0) undo(errno, "sync");
  size_ += line.size();
  struct stat status {};
  if (::fstat(fd_, &status) == 0 && status.st_nlink == 0) {
    throw JournalWriteError(fmt::format(
        "the journal '{}' was deleted while the sweep ran (was its folder removed?): stopping, since nothing it "
        "computes could be kept",
        path_));
  }
}

void SweepJournal::append_unit(const UnitTotals& unit) {
  Json record;
  record["config_hash"] = config_hash_;
  record["unit"] = unit_totals_json(unit, true);
  append_record(record.dump());
}

void SweepJournal::append_data_sha256(const std::string& sha256) {
  Json record;
  record["config_hash"] = config_hash_;
  record["data_sha256"] = sha256;
  append_record(record.dump());
}

void SweepJournal::remove() {
  ::unlink(path_.c_str());
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace tqlab
