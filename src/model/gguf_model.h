// A model from a GGUF file (io/gguf.h): the config from its metadata, the
// weights from its tensors, llama.cpp's names and conventions.
//
// general.architecture must be one of model/architecture.h's GGUF names
// (llama: Llama 2/3 and Mistral, which llama.cpp's converter writes as llama;
// qwen2; qwen3). Hyperparameters, as llama.cpp reads them (src/llama-model.cpp
// llama_model::load_hparams; the keys of gguf-py/gguf/constants.py), {arch}
// standing for the architecture:
//   {arch}.block_count                       layers                     required
//   {arch}.embedding_length                  hidden size                required
//   {arch}.feed_forward_length               intermediate size          required
//   {arch}.attention.head_count              query heads                required
//   {arch}.attention.head_count_kv           kv heads                   default: query heads
//   {arch}.attention.key_length              head dim                   default: hidden / heads
//   {arch}.attention.value_length            must equal the head dim    optional
//   {arch}.rope.dimension_count              must equal the head dim (partial RoPE is not run)
//   {arch}.attention.layer_norm_rms_epsilon  RMSNorm epsilon            required
//   {arch}.rope.freq_base                    theta                      default 10000
//   {arch}.rope.scaling.type                 none or linear ({arch}.rope.scaling.factor)
//   {arch}.context_length                    max_position_embeddings    optional
//   {arch}.vocab_size                        must equal token_embd's rows when present
//   tokenizer.ggml.bos_token_id              the BOS id of `--bos`      optional
// A key that changes the computation in a way tqlab does not run ({arch}.expert_count
// above 0, a per-layer head count array, rope scaling yarn/longrope, a sliding window)
// is an InputError naming the key and what is supported.
//
// Tensors: model/architecture.h's GGUF names. Presence decides what the config
// leaves open: q/k/v biases (blk.0.attn_q.bias), an o bias, lm_head (absent
// output.weight: tied to token_embd, as llama.cpp ties it), and rope_freqs.weight
// (Llama 3 scaling: per-frequency divisors). Every tensor the config implies
// must be present with its shape (ne reversed) and a type tqlab decodes
// (blocks/ggml_type.h); any other tensor is an InputError naming it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/weight_source.h"

namespace tqlab {

class GgufModel : public WeightSource {
 public:
  /// Opens and validates `path`. InputError "model 'PATH': ..." naming the key or tensor.
  static std::unique_ptr<GgufModel> open(const std::string& path);

  const std::string& path() const override { return path_; }
  const char* format() const override { return "gguf"; }
  const ModelConfig& config() const override { return config_; }
  const std::vector<SourceFile>& files() const override { return files_; }
  std::string weight_dtype() const override;
  StoredWeight weight(WeightRole role, int layer) const override;

  const GgufFile& file() const { return *file_; }

 private:
  std::string path_;
  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  std::vector<SourceFile> files_;
  bool interleaved_qk_ = false;
};

/// The config a GGUF's metadata and tensor list describe (the part of GgufModel::open that reads keys).
ModelConfig read_gguf_config(const GgufFile& file);

}  // namespace tqlab
