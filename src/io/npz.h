// NumPy .npz archives (numpy.savez / savez_compressed): a zip file whose
// members "NAME.npy" each hold one tensor NAME. Stored (method 0) and
// deflated (method 8) members are read; zip64 sizes are understood.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "io/tensor_file.h"

namespace tqlab {

class MappedFile;

/// Opens a mapped .npz archive. Stored members stay mapped; deflated members
/// are inflated after their declared sizes are checked against the archive.
std::unique_ptr<TensorFile> open_npz(std::shared_ptr<const MappedFile> mapping, const OpenOptions& options);

/// Writes the tensors as a .npz archive (deflated when `compressed`), atomically.
void write_npz(const std::string& path, std::span<const TensorToWrite> tensors, bool compressed);

}  // namespace tqlab
