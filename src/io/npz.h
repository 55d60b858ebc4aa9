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

#include <memory>
#include <span>
#include <string>

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

namespace detail {
/// write_npz, but with every size and offset in zip64 form and a zip64 end record
/// whatever the sizes: lets tests exercise the zip64 path on small files.
void write_npz_forcing_zip64(const std::string& path, std::span<const TensorToWrite> tensors, bool compressed);
}  // namespace detail

}  // namespace tqlab
