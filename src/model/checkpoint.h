// A Hugging Face checkpoint folder: config.json and its safetensors weights,
// opened, checked against the config, and kept memory-mapped.
//
//   DIR/config.json                      model/model_config.h
//   DIR/model.safetensors                one file, or
//   DIR/model.safetensors.index.json     {"weight_map": {"tensor name": "shard file", ...}}
//   DIR/<shard files>                    as the index names them
//
// model.safetensors wins when both are present (as transformers loads them).
// Every tensor the config implies (model/architecture.h, transformers' names)
// must be present with its shape, and no other: a missing, extra or misshaped
// tensor is an InputError naming it with the expected and found shapes.
// Exceptions, as transformers allows them:
// "model.layers.N.self_attn.rotary_emb.inv_freq" (saved by old versions,
// recomputed from the config), and lm_head.weight in a checkpoint with tied
// embeddings (the embedding matrix serves as lm_head, as transformers ties it).
// Weights are F32, F16 or BF16 (mixed freely); any other dtype is an
// InputError naming the tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/tensor_file.h"
#include "model/model_config.h"
#include "model/weight_source.h"

namespace tqlab {

class Checkpoint : public WeightSource {
 public:
  /// Opens DIR: reads config.json, opens and validates every weight file.
  /// InputError naming the folder, file or tensor on any defect.
  static std::unique_ptr<Checkpoint> open(const std::string& dir);

  const std::string& path() const override { return dir_; }
  const char* format() const override { return "safetensors"; }
  const ModelConfig& config() const override { return config_; }
  const std::vector<SourceFile>& files() const override { return files_; }
  /// The matrices' dtype as core/dtype.h names it ("f32", "bf16"), or "mixed".
  std::string weight_dtype() const override;
  StoredWeight weight(WeightRole role, int layer) const override;

  /// The validated tensor `name` (it is one the config implies).
  const TensorView& tensor(std::string_view name) const;

 private:
  std::string dir_;
  ModelConfig config_;
  std::vector<SourceFile> files_;
  std::vector<std::unique_ptr<TensorFile>> tensor_files_;  ///< parallel to files_
  std::unordered_map<std::string, const TensorView*> tensors_;
};

}  // namespace tqlab
