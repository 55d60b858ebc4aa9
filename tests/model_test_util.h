// Small random-weight Hugging Face checkpoints for the model tests, written
// into a scratch folder: config.json and model.safetensors (or shards and an
// index), in any weight dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"

namespace tqlab::testing {

/// A config.json for `architecture` ("LlamaForCausalLM", ...) with small sizes:
/// vocab 96, hidden 64, intermediate 96, 2 layers, 4 q heads, 2 kv heads,
/// head dim 16 (Qwen3: 24, not hidden/heads); Qwen2 ties its embeddings.
nlohmann::json small_config(const std::string& architecture);

struct CheckpointOptions {
  DType dtype = DType::f32;
  int shards = 1;                    ///< > 1: an index and that many shard files
  std::uint64_t seed = 1;
  std::vector<std::string> drop;     ///< tensor names left out
  std::vector<std::string> extra;    ///< tensors added ([4] floats)
  std::string reshape;               ///< a tensor written with its first axis one longer
};

/// A fresh scratch folder under the test's temporary directory.
std::string scratch_folder(const std::string& name);

/// Writes `config` and random weights for it into `dir` (created).
void write_checkpoint(const std::string& dir, const nlohmann::json& config, const CheckpointOptions& options = {});

/// max |a[i] - b[i]| / max |b[i]| in double: how far a float computation a lands from its reference b
/// (same size), relative to the reference's largest magnitude.
double relative_max_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace tqlab::testing
