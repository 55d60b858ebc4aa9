// NumPy .npy format, versions 1.0, 2.0 and 3.0.
// Spec: numpy/lib/format.py ("NEP 1"). Layout: magic "\x93NUMPY", major, minor,
// header length (u16 for 1.0, u32 for 2.0/3.0, little-endian), an ASCII (3.0: UTF-8)
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces to a multiple of 64 bytes and ended by '\n', then the data.
//
// Read: descr '|b1' (bool), '|u1' '|i1', and '<' or '>' (or '=', native: little-endian here)
// with 'u2' 'i2' 'u4' 'i4' 'u8' 'i8' 'f2' 'f4' 'f8'; and raw 2-byte values '|V2' (what numpy
// writes for ml_dtypes' bfloat16) as DType::raw16. bfloat16 has no numpy dtype, so bf16 dumps
// often store its bits as '<u2': that reads as u16, or as bf16 with OpenOptions::raw16_as_bf16
// (which also reads '|V2' as bf16). C and Fortran order, any rank (0-d included), zero-length
// axes. Anything else is an InputError naming the file, the tensor and what was expected.
//
// Written: version 1.0 (2.0 when the header outgrows 65535 bytes), little-endian, C order,
// byte-identical to what numpy 1.24's np.save writes for the same array. The descr comes from
// core/dtype.h's table: bf16 is written as '<u2' (read it back with raw16_as_bf16, or in numpy
// `(a.astype(np.uint32) << 16).view(np.float32)`), fp8 as '|u1' (its bits), raw16 as '|V2'.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab {

class MappedFile;

/// Opens a mapped .npy file; its one tensor is named after the file's stem
/// ("keys.npy" holds tensor "keys").
std::unique_ptr<TensorFile> open_npy(std::shared_ptr<const MappedFile> mapping, const OpenOptions& options);

/// Parses a .npy stream held in `bytes` into a view named `name` whose data
/// points into `bytes` (file_offset: offset of the data from the start of `bytes`).
/// The stream must hold exactly the data its header declares. `where` names the
/// file (and member) in errors, already quoted: "'keys.npy'", "'kv.npz' member 'k.npy'".
TensorView parse_npy(std::span<const std::byte> bytes, std::string name, std::string_view where,
                     const OpenOptions& options);

/// What a validated .npy header declares.
struct NpyHeader {
  int major_version = 1;             ///< 1, 2 or 3
  DType dtype = DType::f32;
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::uint64_t data_offset = 0;     ///< bytes of preamble + header: where the data starts
  std::uint64_t data_bytes = 0;      ///< product(shape) * dtype_size(dtype), overflow-checked
};

/// Longest .npy preamble (magic, version, header length): 12 bytes (10 for version 1.0).
inline constexpr std::size_t kNpyPreambleMaxBytes = 12;

/// The offset at which the data of a .npy stream starts, read from its preamble (the first
/// 10 bytes for version 1.0, 12 for 2.0/3.0, of `prefix`). Checks magic and version.
std::uint64_t npy_data_offset(std::span<const std::byte> prefix, std::string_view name, std::string_view where);

/// Parses and validates the preamble and header at the start of `prefix`, which must reach
/// at least the data offset (the data itself need not be there). Touches no data.
NpyHeader parse_npy_header(std::span<const std::byte> prefix, std::string_view name, std::string_view where,
                           const OpenOptions& options);

/// The preamble and header of `tensor`'s .npy encoding: its data follows immediately.
/// Checks that tensor.bytes holds product(shape) * dtype_size(dtype) bytes.
std::vector<std::byte> encode_npy_header(const TensorToWrite& tensor);

/// The same header for a tensor whose bytes are written later (io/tensor_stream_writer.h):
/// `tensor.bytes` is not looked at.
std::vector<std::byte> encode_npy_header_for_shape(const TensorToWrite& tensor);

/// The bytes of a .npy file (version 1.0, or 2.0 when the header needs it) holding `tensor`:
/// encode_npy_header(tensor) followed by tensor.bytes.
std::vector<std::byte> encode_npy(const TensorToWrite& tensor);

/// Writes `tensor` as a .npy file, atomically.
void write_npy(const std::string& path, const TensorToWrite& tensor);

}  // namespace tqlab
