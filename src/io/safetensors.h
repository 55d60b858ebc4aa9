// safetensors (spec: huggingface/safetensors README; limits as its reference
// Rust implementation). Byte layout of a file:
//
//   [0, 8)          N: header length in bytes, unsigned 64-bit little-endian
//   [8, 8 + N)      UTF-8 JSON object, possibly padded with trailing spaces:
//                   {"__metadata__": {"key": "value", ...},             (optional)
//                    "name": {"dtype": "F16", "shape": [4, 8],
//                             "data_offsets": [begin, end]}, ...}
//   [8 + N, size)   the data buffer; a tensor's bytes are [begin, end) of it,
//                   C order, little-endian.
//
// Reading is strict, like the reference implementation: the whole header is
// validated before any tensor byte is looked at (N <= 100 MB and inside the
// file; entries have exactly the keys dtype/shape/data_offsets with the right
// types; no duplicate keys; end - begin == product(shape) * itemsize, computed
// with overflow checks; end inside the buffer), and the tensors must tile the
// buffer exactly: no overlaps, no gaps, no trailing bytes. Uncovered bytes
// are an error because a writer that leaves them is broken or the file was
// edited, and silently ignoring them would hide that.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab {

class MappedFile;

/// Opens a mapped .safetensors file after validating its whole header.
/// Supported dtypes: every one of core/dtype.h (BOOL, U8, I8, U16, I16, U32,
/// I32, U64, I64, F8_E4M3, F8_E5M2, F16, BF16, F32, F64); any other is an
/// InputError naming the file, the tensor and the dtype. The header must be
/// UTF-8, as the format requires: a stray byte is an InputError saying where. Tensors are listed in the order of
/// their data offsets (JSON object order is not kept by the parser; offset
/// order is the order writers store them in; zero-byte tensors sharing an
/// offset are ordered by name). Views point into the mapping
/// (`file_offset` = 8 + N + begin, C-contiguous strides); `__metadata__` goes
/// to TensorFile::metadata(). Throws InputError naming the file (and the
/// tensor) on any defect.
std::unique_ptr<TensorFile> open_safetensors(std::shared_ptr<const MappedFile> mapping);

/// Writes the tensors (every dtype; raw16 is stored as BF16) and
/// metadata, atomically. Header entries follow the order of `tensors`, with
/// `__metadata__` first when `metadata` is non-empty; the header is padded
/// with spaces so the data buffer starts at a multiple of 8 bytes; tensor
/// bytes are packed back to back in the given order. Throws InputError
/// naming the file and tensor for a duplicate or reserved name ("__metadata__"),
/// a name or metadata string that is not UTF-8,
/// a negative extent, or `bytes` not holding product(shape) * itemsize bytes.
void write_safetensors(const std::string& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata);

/// The bytes write_safetensors puts before the data buffer (the 8-byte length
/// and the padded JSON header) for these names, dtypes, shapes and metadata;
/// `bytes` of the tensors is not looked at (a streamed writer,
/// io/tensor_stream_writer.h, sends them later). Same checks otherwise.
std::vector<std::byte> encode_safetensors_header(const std::string& path, std::span<const TensorToWrite> tensors,
                                                 const std::map<std::string, std::string>& metadata);

}  // namespace tqlab
