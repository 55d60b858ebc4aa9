// safetensors: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F16", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "value"}}, then the data buffer; offsets are
// relative to the buffer's start. Spec: huggingface/safetensors README.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>

#include "io/tensor_file.h"

namespace tqlab {

class MappedFile;

/// Opens a mapped .safetensors file after validating its whole header.
std::unique_ptr<TensorFile> open_safetensors(std::shared_ptr<const MappedFile> mapping);

/// Writes the tensors (F16, BF16, F32, F64) and metadata, atomically.
void write_safetensors(const std::string& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace tqlab
