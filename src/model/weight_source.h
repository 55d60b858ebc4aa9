// Where a model's config and weights come from: a Hugging Face checkpoint
// folder (model/checkpoint.h) or a GGUF file (model/gguf_model.h). The forward
// pass sees only this interface, so it never asks which format it reads.
//
// A source is validated whole when opened: every tensor its config implies
// (model/architecture.h) is present with its shape and a type tqlab decodes,
// and no other. Weights stay in the memory-mapped files; a StoredWeight points
// at them.
//
// How to add a weight format: a class implementing WeightSource that reads the
// config and checks its tensors against expected_weights(), a branch in
// open_weight_source, and its element types in blocks/ggml_type.h (or mapped to
// them, as safetensors' F32/F16/BF16 are).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/model_config.h"

namespace tqlab {

/// One stored weight tensor, as the forward pass reads it.
struct StoredWeight {
  std::string name;                 ///< as the file names it
  std::uint32_t type_id = 0;        ///< its element type as a ggml type id (safetensors F32/F16/BF16 map to 0/1/30)
  std::vector<std::int64_t> shape;  ///< C order: [rows, cols] for a matrix
  const std::byte* data = nullptr;  ///< rows back to back, each shape.back() values encoded as type_id
  std::uint64_t row_bytes = 0;      ///< bytes of one row (of shape.back() values)
  /// Q and K of a GGUF whose converter reordered each head's rows for ggml's RoPE (model/architecture.h):
  /// the head dim, so that readers undo it; 0 when rows are in transformers' order.
  int interleaved_head_dim = 0;
};

/// A file of the model, for identities and output-path checks.
struct SourceFile {
  std::string path;  ///< DIR/model.safetensors, or the GGUF
  std::string name;  ///< the file name, as results record it
  std::uint64_t bytes = 0;
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;

  /// The folder or file as opened.
  virtual const std::string& path() const = 0;
  /// "safetensors" or "gguf".
  virtual const char* format() const = 0;
  virtual const ModelConfig& config() const = 0;
  /// The file the config was read from: DIR/config.json, or the GGUF itself.
  const std::string& config_path() const { return config().path; }
  /// The files holding the weights (a GGUF: the one file).
  virtual const std::vector<SourceFile>& files() const = 0;
  /// The matrices' type: "f32", "bf16", "q4_k", ..., or "mixed".
  virtual std::string weight_dtype() const = 0;
  /// The validated tensor of `role` (of `layer` for per-layer roles, else -1); has_role(config(), role).
  virtual StoredWeight weight(WeightRole role, int layer) const = 0;

  /// Bytes of every weight file together.
  std::uint64_t weight_bytes() const;
};

/// Opens a checkpoint folder, or a GGUF file (a path that is a regular file). InputError naming the
/// path, file or tensor on any defect.
std::unique_ptr<WeightSource> open_weight_source(const std::string& path);

}  // namespace tqlab
