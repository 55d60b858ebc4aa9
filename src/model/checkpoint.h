// A Hugging Face checkpoint folder: config.json and its safetensors weights,
// opened, checked against the config, and kept memory-mapped.
//
//   DIR/config.json                      model/model_config.h
//   DIR/model.safetensors                one file, or
//   DIR/model.safetensors.index.json     {"weight_map": {"tensor name": "shard file", ...}}
//   DIR/<shard files>                    as the index names them
//
// model.safetensors wins when both are present (as transformers loads them).
// Every tensor the config implies must be present with its shape, and no
// other: a missing, extra or misshaped tensor is an InputError naming it with
// the expected and found shapes. Exceptions, as transformers allows them:
// "model.layers.N.self_attn.rotary_emb.inv_freq" (saved by old versions,
// recomputed from the config), and lm_head.weight in a checkpoint with tied
// embeddings (the embedding matrix serves as lm_head, as transformers ties it).
// Weights are F32, F16 or BF16 (mixed freely); any other dtype is an
// InputError naming the tensor. Tensor names follow transformers:
//   model.embed_tokens.weight                     [vocab, hidden]
//   model.layers.{i}.input_layernorm.weight       [hidden]
//   model.layers.{i}.self_attn.q_proj.weight      [q_heads * head_dim, hidden]   (+ .bias)
//   model.layers.{i}.self_attn.k_proj.weight      [kv_heads * head_dim, hidden]  (+ .bias)
//   model.layers.{i}.self_attn.v_proj.weight      [kv_heads * head_dim, hidden]  (+ .bias)
//   model.layers.{i}.self_attn.o_proj.weight      [hidden, q_heads * head_dim]   (+ .bias)
//   model.layers.{i}.self_attn.q_norm.weight      [head_dim]                     (Qwen3)
//   model.layers.{i}.self_attn.k_norm.weight      [head_dim]                     (Qwen3)
//   model.layers.{i}.post_attention_layernorm.weight [hidden]
//   model.layers.{i}.mlp.gate_proj.weight         [intermediate, hidden]        (+ .bias)
//   model.layers.{i}.mlp.up_proj.weight           [intermediate, hidden]        (+ .bias)
//   model.layers.{i}.mlp.down_proj.weight         [hidden, intermediate]        (+ .bias)
//   model.norm.weight                             [hidden]
//   lm_head.weight                                [vocab, hidden]  (absent when tied)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/tensor_file.h"
#include "model/model_config.h"

namespace tqlab {

/// One weight file of the checkpoint.
struct WeightFile {
  std::string path;        ///< DIR/model.safetensors, DIR/model-00001-of-00002.safetensors
  std::string name;        ///< the file name, as results record it
  std::uint64_t bytes = 0;
  std::unique_ptr<TensorFile> file;
};

class Checkpoint {
 public:
  /// Opens DIR: reads config.json, opens and validates every weight file.
  /// InputError naming the folder, file or tensor on any defect.
  static std::unique_ptr<Checkpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const std::vector<WeightFile>& files() const { return files_; }
  /// Bytes of every weight file together.
  std::uint64_t weight_bytes() const;
  /// The matrices' dtype as core/dtype.h names it ("f32", "bf16"), or "mixed".
  std::string weight_dtype() const;

  /// The validated tensor `name` (it is one the config implies).
  const TensorView& tensor(std::string_view name) const;

 private:
  std::string dir_;
  ModelConfig config_;
  std::vector<WeightFile> files_;
  std::unordered_map<std::string, const TensorView*> tensors_;
};

/// The tensor names and shapes `config` implies, in the order above.
std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected_tensors(const ModelConfig& config);

}  // namespace tqlab
