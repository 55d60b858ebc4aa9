// Writing .npz archives (npz.h): whole (write_npz) or laid out ahead for a
// streaming writer (NpzLayout). Record layouts: io/zip_records.h.
#include "io/npz.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#define ZLIB_CONST
#include <zlib.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/text.h"
#include "io/npy.h"
#include "io/zip_records.h"

namespace tqlab {
namespace {

using namespace zip;

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
