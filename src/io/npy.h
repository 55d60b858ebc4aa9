// NumPy .npy format, versions 1.0, 2.0 and 3.0.
// Spec: numpy/lib/format.py ("NEP 1"). Layout: magic "\x93NUMPY", major, minor,
// header length (u16 for 1.0, u32 for 2.0/3.0, little-endian), an ASCII (3.0: UTF-8)
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces to a multiple of 64 bytes and ended by '\n', then the data.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab {

class MappedFile;

/// Opens a mapped .npy file; its one tensor is named after the file's stem.
std::unique_ptr<TensorFile> open_npy(std::shared_ptr<const MappedFile> mapping, const OpenOptions& options);

/// Parses a .npy stream held in `bytes` into a view named `name` whose data
/// points into `bytes`. `where` names the file (and member) in errors.
TensorView parse_npy(std::span<const std::byte> bytes, std::string name, std::string_view where,
                     const OpenOptions& options);

/// The bytes of a .npy file (version 1.0, or 2.0 when the header needs it) holding `tensor`.
std::vector<std::byte> encode_npy(const TensorToWrite& tensor);

/// Writes `tensor` as a .npy file, atomically.
void write_npy(const std::string& path, const TensorToWrite& tensor);

}  // namespace tqlab
