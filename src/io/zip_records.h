// The zip records NumPy's .npz archives are made of, shared by the reader
// (npz_reader.cpp) and the writers (npz_writer.cpp, tensor_stream_writer.cpp).
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
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tqlab::zip {

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

inline std::uint16_t load_u16(const std::byte* at) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(at[0]) | std::to_integer<unsigned>(at[1]) << 8);
}
inline std::uint32_t load_u32(const std::byte* at) {
  return static_cast<std::uint32_t>(load_u16(at)) | static_cast<std::uint32_t>(load_u16(at + 2)) << 16;
}
inline std::uint64_t load_u64(const std::byte* at) {
  return static_cast<std::uint64_t>(load_u32(at)) | static_cast<std::uint64_t>(load_u32(at + 4)) << 32;
}

/// zlib's CRC-32 of `bytes` continuing from `crc` (0 to start), for any size.
std::uint32_t crc32_of(std::uint32_t crc, std::span<const std::byte> bytes);

}  // namespace tqlab::zip
