// NumPy .npz archives (numpy.savez / savez_compressed): a zip file whose
// members "NAME.npy" each hold one tensor NAME. Stored (method 0) and
// deflated (method 8) members are read; zip64 sizes are understood.
//
// Reading validates the end record, the central directory, every local header
// and every offset and size against the file before any member data is used.
// Refused with an InputError naming the archive and member: other compression
// methods, encryption, multi-part archives, duplicate names, members that are
// not NAME.npy, overlapping members, a deflated member declaring more than
// 1100 times its compressed size (deflate cannot exceed ~1032:1) or a size its
// .npy header does not imply, and a CRC-32 mismatch of an inflated member.
// Stored members are not CRC-checked: that would read every page of a large
// dump at open time, and their .npy headers and sizes are validated anyway.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab {

class MappedFile;

/// Opens a mapped .npz archive. Stored members stay mapped; deflated members
/// are inflated after their declared sizes are checked against the archive.
/// Tensors appear in central-directory order (numpy: the order given to savez).
std::unique_ptr<TensorFile> open_npz(std::shared_ptr<const MappedFile> mapping, const OpenOptions& options);

/// Writes the tensors as a .npz archive (deflated when `compressed`), atomically.
/// Member NAME.npy holds tensor NAME, encoded as by encode_npy (bf16 as '<u2').
/// Zip64 fields are used only where a size, offset or count needs them. The
/// output is deterministic: every member is dated 1980-01-01 00:00.
void write_npz(const std::string& path, std::span<const TensorToWrite> tensors, bool compressed);

/// A stored (uncompressed) .npz archive laid out before its tensors' bytes are
/// known, for a writer that streams them in (io/tensor_stream_writer.h): the
/// bytes come out as write_npz(path, tensors, false) writes them. Layout:
/// member i = [local header][.npy header][tensor bytes] at local_header_offset(i);
/// after the last member, the central directory and end records. The CRC-32 of
/// a member (over its .npy header and tensor bytes) goes into its local header
/// and the directory: both are asked for once the CRCs are known.
class NpzLayout {
 public:
  /// Checks the names as write_npz does; the tensors' `bytes` are not looked at.
  NpzLayout(const std::string& path, std::span<const TensorToWrite> tensors);

  std::size_t member_count() const { return members_.size(); }
  std::uint64_t local_header_offset(std::size_t member) const;
  /// The member's local header for CRC `crc`, then its .npy header: the bytes
  /// from local_header_offset(member) to data_offset(member) (same size for every crc).
  std::vector<std::byte> member_prefix(std::size_t member, std::uint32_t crc) const;
  /// The .npy header alone (the first bytes the member's CRC covers).
  std::span<const std::byte> npy_header(std::size_t member) const;
  /// Archive offset of the member's first tensor byte.
  std::uint64_t data_offset(std::size_t member) const;
  /// Where the central directory starts (just after the last member's data).
  std::uint64_t directory_offset() const { return directory_offset_; }
  /// Central directory and end records, given every member's CRC (member order).
  std::vector<std::byte> directory(std::span<const std::uint32_t> crcs) const;

 private:
  struct Member {
    std::string name;                  // "NAME.npy"
    std::vector<std::byte> npy_header;
    std::uint64_t data_bytes = 0;
    std::uint64_t local_header_offset = 0;
    std::uint64_t local_header_bytes = 0;
  };
  std::vector<Member> members_;
  std::uint64_t directory_offset_ = 0;
};

namespace detail {
/// write_npz, but with every size and offset in zip64 form and a zip64 end record
/// whatever the sizes: lets tests exercise the zip64 path on small files.
void write_npz_forcing_zip64(const std::string& path, std::span<const TensorToWrite> tensors, bool compressed);
}  // namespace detail

}  // namespace tqlab
