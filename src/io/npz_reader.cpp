// Reading .npz archives (npz.h): the end record, the central directory and every
// local header validated against the file, then each member's .npy stream parsed
// where it lies (stored) or inflated (deflated). Record layouts: io/zip_records.h.
#include "io/npz.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#define ZLIB_CONST
#include <zlib.h>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/text.h"
#include "io/npy.h"
#include "io/zip_records.h"

namespace tqlab {
namespace {

using namespace zip;

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
    const std::uint64_t step =
        std::min<std::uint64_t>(data_offset - out.size(), std::max<std::size_t>(out.size(), 65536));
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

}  // namespace tqlab
