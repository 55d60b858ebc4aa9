// NumPy .npz reader and writer: the part of the zip format numpy.savez uses.
//
// Sources: PKWARE APPNOTE.TXT 6.3 (4.3 file format, 4.4 fields, 4.5.3 zip64 extra field),
// numpy/lib/npyio.py (savez: members "NAME.npy", force_zip64 local headers), Python's
// zipfile.py (what numpy's zips look like: data descriptors when streamed, zip64 end
// records), RFC 1951 (deflate, through zlib). All integers are little-endian.
//
//   [local header 1][data 1] ... [local header n][data n]      (data: a whole .npy stream,
//   [central header 1] ... [central header n]                    stored or raw-deflated)
//   [zip64 end record][zip64 locator]                          (only when a field overflows)
//   [end record][comment]
//
// The field offsets of each record are the constants below. A field that overflows its
// 16/32 bits holds all ones and the real value sits in the zip64 extra field (id 0x0001):
// uncompressed size, compressed size, local header offset, disk, in that order, each
// present only when its header field is saturated (a local header carries both sizes).
#include "io/npz.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>

#define ZLIB_CONST
#include <zlib.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/text.h"
#include "io/npy.h"

namespace tqlab {
namespace {

namespace local_header {  // 30 bytes, then name and extra field; the member data follows
constexpr std::uint32_t kSignature = 0x04034b50;
constexpr std::size_t kVersionNeeded = 4, kFlags = 6, kMethod = 8, kTime = 10, kDate = 12, kCrc32 = 14,
                      kCompressedSize = 18, kUncompressedSize = 22, kNameLength = 26, kExtraLength = 28,
                      kSize = 30;
}  // namespace local_header

namespace central_header {  // 46 bytes, then name, extra field and comment
constexpr std::uint32_t kSignature = 0x02014b50;
constexpr std::size_t kVersionMadeBy = 4, kVersionNeeded = 6, kFlags = 8, kMethod = 10, kTime = 12, kDate = 14,
                      kCrc32 = 16, kCompressedSize = 20, kUncompressedSize = 24, kNameLength = 28,
                      kExtraLength = 30, kCommentLength = 32, kDiskStart = 34, kInternalAttributes = 36,
                      kExternalAttributes = 38, kLocalHeaderOffset = 42, kSize = 46;
}  // namespace central_header

namespace end_record {  // 22 bytes, then a comment of up to 65535 bytes: the file's last bytes
constexpr std::uint32_t kSignature = 0x06054b50;
constexpr std::size_t kDisk = 4, kDirectoryDisk = 6, kDiskEntries = 8, kEntries = 10, kDirectorySize = 12,
                      kDirectoryOffset = 16, kCommentLength = 20, kSize = 22;
constexpr std::size_t kMaxComment = 0xFFFF;
}  // namespace end_record

namespace zip64_locator {  // 20 bytes, just before the end record
constexpr std::uint32_t kSignature = 0x07064b50;
constexpr std::size_t kRecordDisk = 4, kRecordOffset = 8, kDiskCount = 16, kSize = 20;
}  // namespace zip64_locator

namespace zip64_end_record {  // 56 bytes (+ extensible data), where the locator points
constexpr std::uint32_t kSignature = 0x06064b50;
constexpr std::size_t kRemainingSize = 4, kVersionMadeBy = 12, kVersionNeeded = 14, kDisk = 16,
                      kDirectoryDisk = 20, kDiskEntries = 24, kEntries = 32, kDirectorySize = 40,
                      kDirectoryOffset = 48, kSize = 56;
}  // namespace zip64_end_record

constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kSaturated32 = 0xFFFFFFFFu;
constexpr std::uint16_t kSaturated16 = 0xFFFFu;

constexpr std::uint16_t kFlagEncrypted = 1u << 0;
constexpr std::uint16_t kFlagStrongEncryption = 1u << 6;
constexpr std::uint16_t kFlagUtf8Name = 1u << 11;

constexpr std::uint16_t kMethodStored = 0;
constexpr std::uint16_t kMethodDeflated = 8;

constexpr std::uint16_t kVersionPlain = 20;  // 2.0: deflate
constexpr std::uint16_t kVersionZip64 = 45;  // 4.5: zip64 fields
constexpr std::uint16_t kMadeByUnix = 3u << 8;
constexpr std::uint16_t kDosDate1980 = (0u << 9) | (1u << 5) | 1u;  // 1980-01-01, the DOS epoch
constexpr std::uint32_t kRegularFileMode = 0100644u;               // -rw-r--r--

// Deflate's best case is ~1032:1 (258-byte matches in 2-bit codes); anything beyond this
// declared ratio is a corrupt or malicious size, refused before a byte is allocated.
constexpr std::uint64_t kMaxDeflateRatio = 1100;

// zlib counts in 32-bit uInt: larger buffers go through in pieces of this size.
constexpr std::size_t kZlibPiece = std::size_t{1} << 30;

std::uint16_t load_u16(const std::byte* at) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(at[0]) | std::to_integer<unsigned>(at[1]) << 8);
}
std::uint32_t load_u32(const std::byte* at) {
  return static_cast<std::uint32_t>(load_u16(at)) | static_cast<std::uint32_t>(load_u16(at + 2)) << 16;
}
std::uint64_t load_u64(const std::byte* at) {
  return static_cast<std::uint64_t>(load_u32(at)) | static_cast<std::uint64_t>(load_u32(at + 4)) << 32;
}

std::uint32_t crc32_of(std::uint32_t crc, std::span<const std::byte> bytes) {
  if (bytes.empty()) return crc;  // zlib's crc32 of a null buffer is the initial value, not `crc`
  return static_cast<std::uint32_t>(
      ::crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<z_size_t>(bytes.size())));
}

// ---------------------------------------------------------------------------
// Reading

struct Member {
  std::string name;                    // as stored: "keys.npy"
  std::string where;                   // "'a.npz' member 'keys.npy'", for messages
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_header_offset = 0;
  std::uint64_t data_offset = 0;       // found from the local header
};

struct CentralDirectory {
  std::uint64_t entries = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t end_records_offset = 0;  // first byte of the (zip64) end records
};

class ArchiveReader {
 public:
  ArchiveReader(std::span<const std::byte> bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  // Every member, in central-directory order, with every offset and size checked.
  std::vector<Member> read_members() {
    const CentralDirectory directory = read_end_records();
    std::vector<Member> members = read_central_directory(directory);
    std::set<std::string_view> names;
    for (Member& member : members) {
      if (!names.insert(member.name).second) fail("{}: the name appears twice in the archive", member.where);
      locate_data(member, directory.offset);
    }
    check_no_overlap(members);
    return members;
  }

 private:
  bool fits(std::uint64_t offset, std::uint64_t length, std::uint64_t limit) const {
    return offset <= limit && length <= limit - offset;
  }
  const std::byte* at(std::uint64_t offset) const { return bytes_.data() + offset; }

  CentralDirectory read_end_records() const {
    const std::uint64_t size = bytes_.size();
    if (size < end_record::kSize) {
      fail("'{}': {} bytes is too short for a zip archive (its end record alone takes {})", path_, size,
           end_record::kSize);
    }
    // The end record sits before a comment of unknown length: search back for a signature
    // whose comment length reaches exactly the end of the file.
    const std::uint64_t last = size - end_record::kSize;
    const std::uint64_t first = last - std::min<std::uint64_t>(last, end_record::kMaxComment);
    std::uint64_t found = size;
    for (std::uint64_t pos = last + 1; pos-- > first;) {
      if (load_u32(at(pos)) == end_record::kSignature &&
          pos + end_record::kSize + load_u16(at(pos + end_record::kCommentLength)) == size) {
        found = pos;
        break;
      }
    }
    if (found == size) {
      fail("'{}': no zip end-of-central-directory record: not an .npz archive, or truncated", path_);
    }
    const std::byte* end = at(found);
    CentralDirectory directory;
    directory.entries = load_u16(end + end_record::kEntries);
    directory.size = load_u32(end + end_record::kDirectorySize);
    directory.offset = load_u32(end + end_record::kDirectoryOffset);
    directory.end_records_offset = found;
    if (load_u16(end + end_record::kDisk) != 0 || load_u16(end + end_record::kDirectoryDisk) != 0 ||
        load_u16(end + end_record::kDiskEntries) != directory.entries) {
      fail("'{}': multi-part zip archives are not supported", path_);
    }

    if (found >= zip64_locator::kSize &&
        load_u32(at(found - zip64_locator::kSize)) == zip64_locator::kSignature) {
      const std::uint64_t locator_offset = found - zip64_locator::kSize;
      const std::byte* locator = at(locator_offset);
      if (load_u32(locator + zip64_locator::kRecordDisk) != 0 || load_u32(locator + zip64_locator::kDiskCount) > 1) {
        fail("'{}': multi-part zip archives are not supported", path_);
      }
      const std::uint64_t record_offset = load_u64(locator + zip64_locator::kRecordOffset);
      if (!fits(record_offset, zip64_end_record::kSize, locator_offset)) {
        fail("'{}': corrupt zip64 locator: its end record at offset {} is not inside the archive", path_,
             record_offset);
      }
      const std::byte* record = at(record_offset);
      if (load_u32(record) != zip64_end_record::kSignature) {
        fail("'{}': corrupt archive: no zip64 end record at offset {} where the locator points", path_,
             record_offset);
      }
      directory.entries = load_u64(record + zip64_end_record::kEntries);
      directory.size = load_u64(record + zip64_end_record::kDirectorySize);
      directory.offset = load_u64(record + zip64_end_record::kDirectoryOffset);
      directory.end_records_offset = record_offset;
      if (load_u32(record + zip64_end_record::kDisk) != 0 || load_u32(record + zip64_end_record::kDirectoryDisk) != 0 ||
          load_u64(record + zip64_end_record::kDiskEntries) != directory.entries) {
        fail("'{}': multi-part zip archives are not supported", path_);
      }
    }

    if (!fits(directory.offset, directory.size, directory.end_records_offset)) {
      fail("'{}': corrupt central directory: {} bytes at offset {} do not fit before the end records at {}", path_,
           directory.size, directory.offset, directory.end_records_offset);
    }
    if (directory.entries > directory.size / central_header::kSize) {
      fail("'{}': corrupt central directory: {} bytes cannot hold the {} entries the end record declares", path_,
           directory.size, directory.entries);
    }
    return directory;
  }

  std::vector<Member> read_central_directory(const CentralDirectory& directory) const {
    std::vector<Member> members;
    members.reserve(directory.entries);  // bounded above by size / 46
    const std::uint64_t stop = directory.offset + directory.size;
    std::uint64_t cursor = directory.offset;
    for (std::uint64_t index = 0; index < directory.entries; ++index) {
      if (!fits(cursor, central_header::kSize, stop) || load_u32(at(cursor)) != central_header::kSignature) {
        fail("'{}': corrupt central directory: entry {} at offset {} is not a central directory header", path_,
             index, cursor);
      }
      const std::byte* header = at(cursor);
      const std::uint64_t name_length = load_u16(header + central_header::kNameLength);
      const std::uint64_t extra_length = load_u16(header + central_header::kExtraLength);
      const std::uint64_t comment_length = load_u16(header + central_header::kCommentLength);
      const std::uint64_t entry_size = central_header::kSize + name_length + extra_length + comment_length;
      if (!fits(cursor, entry_size, stop)) {
        fail("'{}': corrupt central directory: entry {} runs past the directory's end", path_, index);
      }
      Member member;
      member.name.assign(reinterpret_cast<const char*>(header + central_header::kSize), name_length);
      member.where = fmt::format("'{}' member '{}'", path_, printable(member.name));
      member.flags = load_u16(header + central_header::kFlags);
      member.method = load_u16(header + central_header::kMethod);
      member.crc32 = load_u32(header + central_header::kCrc32);
      member.compressed_size = load_u32(header + central_header::kCompressedSize);
      member.uncompressed_size = load_u32(header + central_header::kUncompressedSize);
      member.local_header_offset = load_u32(header + central_header::kLocalHeaderOffset);
      std::uint32_t disk = load_u16(header + central_header::kDiskStart);
      read_zip64_extra(std::span(header + central_header::kSize + name_length, extra_length), member, disk);
      if (disk != 0) fail("{}: multi-part zip archives are not supported", member.where);
      members.push_back(std::move(member));
      cursor += entry_size;
    }
    if (cursor != stop) {
      fail("'{}': corrupt central directory: {} bytes left after its {} entries", path_, stop - cursor,
           directory.entries);
    }
    return members;
  }

  // Replaces the saturated fields of `member` (and `disk`) by their zip64 values.
  void read_zip64_extra(std::span<const std::byte> extra, Member& member, std::uint32_t& disk) const {
    const bool need_uncompressed = member.uncompressed_size == kSaturated32;
    const bool need_compressed = member.compressed_size == kSaturated32;
    const bool need_offset = member.local_header_offset == kSaturated32;
    const bool need_disk = disk == kSaturated16;
    if (!need_uncompressed && !need_compressed && !need_offset && !need_disk) return;
    std::size_t pos = 0;
    while (pos + 4 <= extra.size()) {
      const std::uint16_t id = load_u16(extra.data() + pos);
      const std::size_t length = load_u16(extra.data() + pos + 2);
      if (pos + 4 + length > extra.size()) break;
      if (id == kZip64ExtraId) {
        std::span<const std::byte> field = extra.subspan(pos + 4, length);
        auto take = [&](std::size_t bytes) {
          if (field.size() < bytes) {
            fail("{}: corrupt zip64 extra field: too short for the sizes its header leaves to it", member.where);
          }
          const std::uint64_t value = bytes == 8 ? load_u64(field.data()) : load_u32(field.data());
          field = field.subspan(bytes);
          return value;
        };
        if (need_uncompressed) member.uncompressed_size = take(8);
        if (need_compressed) member.compressed_size = take(8);
        if (need_offset) member.local_header_offset = take(8);
        if (need_disk) disk = static_cast<std::uint32_t>(take(4));
        return;
      }
      pos += 4 + length;
    }
    fail("{}: corrupt archive: sizes or offset are 0xFFFFFFFF but no zip64 extra field holds them", member.where);
  }

  // Checks the member's kind and its local header; sets member.data_offset.
  void locate_data(Member& member, std::uint64_t directory_offset) const {
    if ((member.flags & (kFlagEncrypted | kFlagStrongEncryption)) != 0) {
      fail("{}: the member is encrypted; only unencrypted archives can be read", member.where);
    }
    if (member.method != kMethodStored && member.method != kMethodDeflated) {
      fail("{}: compression method {} is not supported (expected 0, stored, or 8, deflate, as numpy writes)",
           member.where, member.method);
    }
    if (!std::string_view(member.name).ends_with(".npy")) {
      fail("{}: not a .npy array (an .npz holds only NAME.npy members)", member.where);
    }
    if (member.name.size() == 4) fail("{}: the member's tensor name is empty", member.where);

    const std::uint64_t offset = member.local_header_offset;
    if (!fits(offset, local_header::kSize, directory_offset) || load_u32(at(offset)) != local_header::kSignature) {
      fail("{}: corrupt archive: no local file header at offset {} (the central directory starts at {})",
           member.where, offset, directory_offset);
    }
    const std::byte* header = at(offset);
    const std::uint64_t name_length = load_u16(header + local_header::kNameLength);
    const std::uint64_t extra_length = load_u16(header + local_header::kExtraLength);
    if ((load_u16(header + local_header::kFlags) & (kFlagEncrypted | kFlagStrongEncryption)) != 0) {
      fail("{}: the member is encrypted; only unencrypted archives can be read", member.where);
    }
    if (load_u16(header + local_header::kMethod) != member.method) {
      fail("{}: corrupt archive: local header says compression method {}, central directory {}", member.where,
           load_u16(header + local_header::kMethod), member.method);
    }
    const std::uint64_t name_offset = offset + local_header::kSize;
    if (!fits(name_offset, name_length, directory_offset) ||
        std::string_view(reinterpret_cast<const char*>(at(name_offset)), name_length) != member.name) {
      fail("{}: corrupt archive: the local header at offset {} names a different member", member.where, offset);
    }
    member.data_offset = name_offset + name_length + extra_length;
    if (!fits(member.data_offset, member.compressed_size, directory_offset)) {
      fail("{}: corrupt archive: {} bytes of member data at offset {} run past the central directory at {}",
           member.where, member.compressed_size, member.data_offset, directory_offset);
    }
  }

  // Members whose bytes overlap are how "overlapping" zip bombs multiply one payload.
  void check_no_overlap(const std::vector<Member>& members) const {
    std::vector<const Member*> by_offset;
    for (const Member& member : members) by_offset.push_back(&member);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const Member* a, const Member* b) { return a->local_header_offset < b->local_header_offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
      const Member& before = *by_offset[i - 1];
      if (before.data_offset + before.compressed_size > by_offset[i]->local_header_offset) {
        fail("'{}': corrupt archive: members '{}' and '{}' overlap", path_, printable(before.name),
           printable(by_offset[i]->name));
      }
    }
  }

  std::span<const std::byte> bytes_;
  const std::string& path_;
};

// Raw deflate (RFC 1951, no zlib or gzip wrapper: how zip stores it) decoded from an
// input span into output pieces of any size.
class RawInflater {
 public:
  RawInflater(std::span<const std::byte> input, std::string_view where) : input_(input), where_(where) {
    if (inflateInit2(&stream_, -MAX_WBITS) != Z_OK) fail("{}: cannot initialize zlib", where_);
  }
  ~RawInflater() { inflateEnd(&stream_); }
  RawInflater(const RawInflater&) = delete;
  RawInflater& operator=(const RawInflater&) = delete;

  // Writes up to `size` inflated bytes to `out`; fewer only when the deflate stream ended.
  std::size_t inflate_into(std::byte* out, std::size_t size) {
    std::size_t produced = 0;
    while (produced < size && !finished_) {
      if (stream_.avail_in == 0 && handed_ < input_.size()) {
        const std::size_t piece = std::min(input_.size() - handed_, kZlibPiece);
        stream_.next_in = reinterpret_cast<const Bytef*>(input_.data() + handed_);
        stream_.avail_in = static_cast<uInt>(piece);
        handed_ += piece;
      }
      const std::size_t room = std::min(size - produced, kZlibPiece);
      stream_.next_out = reinterpret_cast<Bytef*>(out + produced);
      stream_.avail_out = static_cast<uInt>(room);
      const int status = inflate(&stream_, Z_NO_FLUSH);
      produced += room - stream_.avail_out;
      if (status == Z_STREAM_END) {
        finished_ = true;
      } else if (status == Z_BUF_ERROR && stream_.avail_in == 0 && handed_ == input_.size()) {
        fail("{}: the compressed data ends before its deflate stream does (truncated or corrupt)", where_);
      } else if (status != Z_OK && status != Z_BUF_ERROR) {
        fail("{}: corrupt deflate data ({})", where_, stream_.msg != nullptr ? stream_.msg : zError(status));
      }
    }
    return produced;
  }

  bool finished() const { return finished_; }
  // Compressed bytes not consumed by the stream (after it finished: bytes past its end).
  std::uint64_t unread_input() const { return input_.size() - handed_ + stream_.avail_in; }

 private:
  std::span<const std::byte> input_;
  std::string_view where_;
  z_stream stream_{};
  std::size_t handed_ = 0;  // input bytes given to zlib so far
  bool finished_ = false;
};

// The whole .npy stream of a deflated member, after checking that the size it declares
// is what its .npy header implies and at most kMaxDeflateRatio times its compressed size;
// the CRC-32 is verified.
std::vector<std::byte> inflate_member(std::span<const std::byte> compressed, const Member& member,
                                      std::string_view tensor_name, const OpenOptions& options) {
  const std::uint64_t declared = member.uncompressed_size;
  std::uint64_t ratio_limit = 0;
  if (!__builtin_mul_overflow(member.compressed_size, kMaxDeflateRatio, &ratio_limit) && declared > ratio_limit) {
    fail("{}: declares {} bytes inflated from {} compressed, beyond deflate's ~1032:1 limit (corrupt archive or "
         "a decompression bomb)",
         member.where, declared, member.compressed_size);
  }
  RawInflater inflater(compressed, member.where);
  std::vector<std::byte> out;
  auto inflate_up_to = [&](std::uint64_t size) {
    const std::size_t old = out.size();
    out.resize(size);
    const std::size_t got = inflater.inflate_into(out.data() + old, size - old);
    if (got < size - old) {
      fail("{}: inflates to only {} bytes, fewer than the {} it declares", member.where, old + got, declared);
    }
  };

  // The preamble says where the header ends; the header says how big the data is.
  inflate_up_to(std::min<std::uint64_t>(kNpyPreambleMaxBytes, declared));
  const std::uint64_t data_offset = npy_data_offset(out, tensor_name, member.where);
  if (data_offset > declared) {
    fail("{}: its .npy header would end at byte {}, past the {} bytes the member declares", member.where,
         data_offset, declared);
  }
  // Grow toward the header's end no faster than output really arrives, so an absurd
  // header length costs memory only in proportion to real data.
  while (out.size() < data_offset) {
    const std::uint64_t step = std::min<std::uint64_t>(data_offset - out.size(), std::max<std::size_t>(out.size(), 65536));
    inflate_up_to(out.size() + step);
  }
  const NpyHeader header = parse_npy_header(out, tensor_name, member.where, options);
  if (header.data_offset + header.data_bytes != declared) {
    fail("{}: declares {} bytes inflated, but its .npy header implies {} ({} of header, {} of data)", member.where,
         declared, header.data_offset + header.data_bytes, header.data_offset, header.data_bytes);
  }
  inflate_up_to(declared);
  if (!inflater.finished()) {
    std::byte beyond;
    if (inflater.inflate_into(&beyond, 1) != 0) {
      fail("{}: inflates to more than the {} bytes it declares", member.where, declared);
    }
  }
  if (inflater.unread_input() != 0) {
    fail("{}: {} bytes of compressed data follow the end of the deflate stream", member.where,
         inflater.unread_input());
  }
  const std::uint32_t crc = crc32_of(0, out);
  if (crc != member.crc32) {
    fail("{}: CRC-32 mismatch: the inflated data has {:08x}, the archive says {:08x} (corrupt member)", member.where,
         crc, member.crc32);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Writing

class LittleEndianBytes {
 public:
  void u16(std::uint64_t value) { put(value, 2); }
  void u32(std::uint64_t value) { put(value, 4); }
  void u64(std::uint64_t value) { put(value, 8); }
  void text(std::string_view text) {
    const auto* begin = reinterpret_cast<const std::byte*>(text.data());
    bytes_.insert(bytes_.end(), begin, begin + text.size());
  }
  void append(std::span<const std::byte> bytes) { bytes_.insert(bytes_.end(), bytes.begin(), bytes.end()); }
  std::span<const std::byte> bytes() const { return bytes_; }
  std::size_t size() const { return bytes_.size(); }

 private:
  void put(std::uint64_t value, int count) {
    for (int i = 0; i < count; ++i) bytes_.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFF));
  }
  std::vector<std::byte> bytes_;
};

struct WrittenMember {
  std::string name;
  std::uint16_t method = kMethodStored;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_header_offset = 0;
};

// Raw deflate of the concatenated pieces at zlib's default level (what savez_compressed uses).
std::vector<std::byte> deflate_raw(std::span<const std::span<const std::byte>> pieces, std::string_view where) {
  struct Deflater {
    z_stream stream{};
    bool ready = false;
    ~Deflater() {
      if (ready) deflateEnd(&stream);
    }
  } deflater;
  z_stream& stream = deflater.stream;
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    fail("{}: cannot initialize zlib", where);
  }
  deflater.ready = true;
  std::uint64_t total = 0;
  for (const auto& piece : pieces) total += piece.size();
  std::vector<std::byte> out(std::max<std::uint64_t>(total / 2, 4096));
  std::size_t used = 0;
  // Runs deflate until it has taken all given input (and, finishing, written the end).
  auto pump = [&](int flush) {
    int status = Z_OK;
    do {
      if (out.size() - used < 4096) out.resize(out.size() * 2);
      const std::size_t room = std::min(out.size() - used, kZlibPiece);
      stream.next_out = reinterpret_cast<Bytef*>(out.data() + used);
      stream.avail_out = static_cast<uInt>(room);
      status = deflate(&stream, flush);
      used += room - stream.avail_out;
      if (status == Z_STREAM_ERROR) fail("{}: zlib deflate failed", where);
    } while (stream.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
  };
  for (const auto& piece : pieces) {
    for (std::size_t done = 0; done < piece.size();) {
      const std::size_t size = std::min(piece.size() - done, kZlibPiece);
      stream.next_in = reinterpret_cast<const Bytef*>(piece.data() + done);
      stream.avail_in = static_cast<uInt>(size);
      pump(Z_NO_FLUSH);
      done += size;
    }
  }
  stream.avail_in = 0;
  pump(Z_FINISH);
  out.resize(used);
  return out;
}

// Bit 11 says the name is UTF-8; a name that is not (bytes from another archive) goes without it.
std::uint16_t name_flags(std::string_view name) {
  const bool ascii = std::all_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  return ascii || !is_valid_utf8(name) ? 0 : kFlagUtf8Name;
}

// Local header; sizes in zip64 form (both, as the format requires) when either overflows.
void append_local_header(LittleEndianBytes& out, const WrittenMember& member, bool force_zip64) {
  const bool zip64 = force_zip64 || member.compressed_size >= kSaturated32 || member.uncompressed_size >= kSaturated32;
  out.u32(local_header::kSignature);
  out.u16(zip64 ? kVersionZip64 : kVersionPlain);
  out.u16(name_flags(member.name));
  out.u16(member.method);
  out.u16(0);  // time 00:00
  out.u16(kDosDate1980);
  out.u32(member.crc32);
  out.u32(zip64 ? kSaturated32 : member.compressed_size);
  out.u32(zip64 ? kSaturated32 : member.uncompressed_size);
  out.u16(member.name.size());
  out.u16(zip64 ? 20 : 0);
  out.text(member.name);
  if (zip64) {
    out.u16(kZip64ExtraId);
    out.u16(16);
    out.u64(member.uncompressed_size);
    out.u64(member.compressed_size);
  }
}

void append_central_header(LittleEndianBytes& out, const WrittenMember& member, bool force_zip64) {
  const bool big_uncompressed = force_zip64 || member.uncompressed_size >= kSaturated32;
  const bool big_compressed = force_zip64 || member.compressed_size >= kSaturated32;
  const bool big_offset = force_zip64 || member.local_header_offset >= kSaturated32;
  const int extra_fields = int{big_uncompressed} + int{big_compressed} + int{big_offset};
  const std::uint16_t version = extra_fields > 0 ? kVersionZip64 : kVersionPlain;
  out.u32(central_header::kSignature);
  out.u16(kMadeByUnix | version);
  out.u16(version);
  out.u16(name_flags(member.name));
  out.u16(member.method);
  out.u16(0);
  out.u16(kDosDate1980);
  out.u32(member.crc32);
  out.u32(big_compressed ? kSaturated32 : member.compressed_size);
  out.u32(big_uncompressed ? kSaturated32 : member.uncompressed_size);
  out.u16(member.name.size());
  out.u16(extra_fields > 0 ? 4 + 8 * extra_fields : 0);
  out.u16(0);  // comment length
  out.u16(0);  // disk
  out.u16(0);  // internal attributes
  out.u32(kRegularFileMode << 16);
  out.u32(big_offset ? kSaturated32 : member.local_header_offset);
  out.text(member.name);
  if (extra_fields > 0) {
    out.u16(kZip64ExtraId);
    out.u16(8 * extra_fields);
    if (big_uncompressed) out.u64(member.uncompressed_size);
    if (big_compressed) out.u64(member.compressed_size);
    if (big_offset) out.u64(member.local_header_offset);
  }
}

// [zip64 end record + locator] + end record, for a directory of `entries` entries.
void append_end_records(LittleEndianBytes& out, std::uint64_t entries, std::uint64_t directory_offset,
                        std::uint64_t directory_size, std::uint64_t end_offset, bool force_zip64) {
  const bool zip64 = force_zip64 || entries >= kSaturated16 || directory_offset >= kSaturated32 ||
                     directory_size >= kSaturated32;
  if (zip64) {
    out.u32(zip64_end_record::kSignature);
    out.u64(zip64_end_record::kSize - 12);  // size of the rest of the record
    out.u16(kMadeByUnix | kVersionZip64);
    out.u16(kVersionZip64);
    out.u32(0);  // this disk
    out.u32(0);  // directory's disk
    out.u64(entries);
    out.u64(entries);
    out.u64(directory_size);
    out.u64(directory_offset);
    out.u32(zip64_locator::kSignature);
    out.u32(0);  // disk of the zip64 end record
    out.u64(end_offset);
    out.u32(1);  // disks in all
  }
  out.u32(end_record::kSignature);
  out.u16(0);
  out.u16(0);
  out.u16(zip64 ? kSaturated16 : entries);
  out.u16(zip64 ? kSaturated16 : entries);
  out.u32(zip64 ? kSaturated32 : directory_size);
  out.u32(zip64 ? kSaturated32 : directory_offset);
  out.u16(0);  // comment length
}

void check_member_names(const std::string& path, std::span<const TensorToWrite> tensors) {
  std::set<std::string_view> names;
  for (const TensorToWrite& tensor : tensors) {
    if (tensor.name.empty()) fail("'{}': a tensor with an empty name cannot be an .npz member", path);
    if (tensor.name.size() > 0xFFFF - 4) {
      fail("'{}': tensor name '{}' is too long for a zip member", path, printable(tensor.name));
    }
    if (!names.insert(tensor.name).second) fail("'{}': tensor name '{}' given twice", path, printable(tensor.name));
  }
}

// A stored member of `size` bytes (its .npy header and data) at archive offset `offset`.
WrittenMember stored_member(const std::string& name, std::uint64_t size, std::uint64_t offset, std::uint32_t crc) {
  WrittenMember member;
  member.name = name;
  member.method = kMethodStored;
  member.crc32 = crc;
  member.uncompressed_size = size;
  member.compressed_size = size;
  member.local_header_offset = offset;
  return member;
}

void write_npz_archive(const std::string& path, std::span<const TensorToWrite> tensors, bool compressed,
                       bool force_zip64) {
  check_member_names(path, tensors);
  AtomicFileWriter writer(path);
  std::vector<WrittenMember> members;
  for (const TensorToWrite& tensor : tensors) {
    const std::vector<std::byte> npy_header = encode_npy_header(tensor);
    const std::span<const std::byte> pieces[] = {npy_header, tensor.bytes};
    WrittenMember member;
    member.name = tensor.name + ".npy";
    member.crc32 = crc32_of(crc32_of(0, npy_header), tensor.bytes);
    member.uncompressed_size = npy_header.size() + tensor.bytes.size();
    std::vector<std::byte> deflated;
    if (compressed) {
      deflated = deflate_raw(pieces, fmt::format("'{}' member '{}'", path, printable(member.name)));
      member.method = kMethodDeflated;
      member.compressed_size = deflated.size();
    } else {
      member.compressed_size = member.uncompressed_size;
    }
    member.local_header_offset = writer.position();
    LittleEndianBytes header;
    append_local_header(header, member, force_zip64);
    writer.write(header.bytes());
    if (compressed) {
      writer.write(deflated);
    } else {
      writer.write(npy_header);
      writer.write(tensor.bytes);  // straight from the caller: no copy of the data
    }
    members.push_back(std::move(member));
  }
  const std::uint64_t directory_offset = writer.position();
  LittleEndianBytes tail;
  for (const WrittenMember& member : members) append_central_header(tail, member, force_zip64);
  const std::uint64_t directory_size = tail.size();
  append_end_records(tail, members.size(), directory_offset, directory_size, directory_offset + directory_size,
                     force_zip64);
  writer.write(tail.bytes());
  writer.commit();
}

}  // namespace

std::unique_ptr<TensorFile> open_npz(std::shared_ptr<const MappedFile> mapping, const OpenOptions& options) {
  const std::string& path = mapping->path();
  const std::span<const std::byte> bytes = mapping->bytes();
  auto file = std::make_unique<TensorFile>(path, "npz");
  for (const Member& member : ArchiveReader(bytes, path).read_members()) {
    const std::string tensor_name = member.name.substr(0, member.name.size() - 4);
    const std::span<const std::byte> data = bytes.subspan(member.data_offset, member.compressed_size);
    TensorView view;
    if (member.method == kMethodStored) {
      if (member.compressed_size != member.uncompressed_size) {
        fail("{}: corrupt archive: stored member has {} bytes but declares {} uncompressed", member.where,
             member.compressed_size, member.uncompressed_size);
      }
      view = parse_npy(data, tensor_name, member.where, options);
      view.file_offset += member.data_offset;
    } else {
      std::vector<std::byte> inflated = inflate_member(data, member, tensor_name, options);
      const std::size_t size = inflated.size();
      const std::byte* owned = file->adopt_buffer(std::move(inflated));
      view = parse_npy(std::span(owned, size), tensor_name, member.where, options);
      view.file_offset = member.data_offset;  // where its compressed bytes are; release() leaves it alone
    }
    file->add_tensor(std::move(view));
  }
  file->set_mapping(std::move(mapping));
  return file;
}

NpzLayout::NpzLayout(const std::string& path, std::span<const TensorToWrite> tensors) {
  check_member_names(path, tensors);
  std::uint64_t offset = 0;
  for (const TensorToWrite& tensor : tensors) {
    Member member;
    member.name = tensor.name + ".npy";
    member.npy_header = encode_npy_header_for_shape(tensor);
    member.data_bytes = dtype_size(tensor.dtype);
    for (const std::int64_t extent : tensor.shape) member.data_bytes *= static_cast<std::uint64_t>(extent);
    member.local_header_offset = offset;
    LittleEndianBytes header;
    append_local_header(header, stored_member(member.name, member.npy_header.size() + member.data_bytes, offset, 0),
                        false);
    member.local_header_bytes = header.size();
    offset += member.local_header_bytes + member.npy_header.size() + member.data_bytes;
    members_.push_back(std::move(member));
  }
  directory_offset_ = offset;
}

std::uint64_t NpzLayout::local_header_offset(std::size_t member) const {
  return members_.at(member).local_header_offset;
}

std::vector<std::byte> NpzLayout::member_prefix(std::size_t index, std::uint32_t crc) const {
  const Member& member = members_.at(index);
  LittleEndianBytes out;
  append_local_header(out, stored_member(member.name, member.npy_header.size() + member.data_bytes,
                                         member.local_header_offset, crc),
                      false);
  out.append(member.npy_header);
  return {out.bytes().begin(), out.bytes().end()};
}

std::span<const std::byte> NpzLayout::npy_header(std::size_t member) const { return members_.at(member).npy_header; }

std::uint64_t NpzLayout::data_offset(std::size_t index) const {
  const Member& member = members_.at(index);
  return member.local_header_offset + member.local_header_bytes + member.npy_header.size();
}

std::vector<std::byte> NpzLayout::directory(std::span<const std::uint32_t> crcs) const {
  if (crcs.size() != members_.size()) {
    throw InternalError(fmt::format("NpzLayout: {} CRCs for {} members", crcs.size(), members_.size()));
  }
  LittleEndianBytes out;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const Member& member = members_[i];
    append_central_header(out,
                          stored_member(member.name, member.npy_header.size() + member.data_bytes,
                                        member.local_header_offset, crcs[i]),
                          false);
  }
  const std::uint64_t directory_size = out.size();
  append_end_records(out, members_.size(), directory_offset_, directory_size, directory_offset_ + directory_size,
                     false);
  return {out.bytes().begin(), out.bytes().end()};
}

void write_npz(const std::string& path, std::span<const TensorToWrite> tensors, bool compressed) {
  write_npz_archive(path, tensors, compressed, false);
}

namespace detail {
void write_npz_forcing_zip64(const std::string& path, std::span<const TensorToWrite> tensors, bool compressed) {
  write_npz_archive(path, tensors, compressed, true);
}
}  // namespace detail

}  // namespace tqlab
