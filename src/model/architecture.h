// The architectures tqlab runs, and the tensors of their layer recipe in both
// naming conventions: one table each, so that the checkpoint readers, the GGUF
// reader and the forward pass never spell a tensor name of their own.
//
// The four families share one decoder layout (model/transformer.h): RMSNorm
// pre-norm, grouped-query attention with RoPE, SwiGLU. What differs is a few
// flags: where biases are, Qwen3's per-head q/k norm, and, in GGUF files,
// whether llama.cpp's converter reordered the q/k rows for ggml's RoPE.
//
// Tensor names (transformers' modeling_*.py; llama.cpp gguf-py/gguf/constants.py
// TENSOR_NAMES for MODEL_ARCH.LLAMA, QWEN2, QWEN3; "{}" is the layer):
//   role         Hugging Face                                 GGUF                      shape (C order)
//   embedding    model.embed_tokens.weight                    token_embd.weight         [vocab, hidden]
//   input_norm   model.layers.{}.input_layernorm.weight       blk.{}.attn_norm.weight   [hidden]
//   q (+ bias)   model.layers.{}.self_attn.q_proj.weight      blk.{}.attn_q.weight      [q_heads * head_dim, hidden]
//   k (+ bias)   model.layers.{}.self_attn.k_proj.weight      blk.{}.attn_k.weight      [kv_heads * head_dim, hidden]
//   v (+ bias)   model.layers.{}.self_attn.v_proj.weight      blk.{}.attn_v.weight      [kv_heads * head_dim, hidden]
//   o (+ bias)   model.layers.{}.self_attn.o_proj.weight      blk.{}.attn_output.weight [hidden, q_heads * head_dim]
//   q_norm       model.layers.{}.self_attn.q_norm.weight      blk.{}.attn_q_norm.weight [head_dim]     (Qwen3)
//   k_norm       model.layers.{}.self_attn.k_norm.weight      blk.{}.attn_k_norm.weight [head_dim]     (Qwen3)
//   post_norm    model.layers.{}.post_attention_layernorm.weight  blk.{}.ffn_norm.weight [hidden]
//   gate/up      model.layers.{}.mlp.{gate,up}_proj.weight    blk.{}.ffn_{gate,up}.weight   [intermediate, hidden]
//   down         model.layers.{}.mlp.down_proj.weight         blk.{}.ffn_down.weight    [hidden, intermediate]
//   final_norm   model.norm.weight                            output_norm.weight        [hidden]
//   lm_head      lm_head.weight                               output.weight             [vocab, hidden] (absent: tied)
//   rope_freqs   -                                            rope_freqs.weight         [head_dim / 2] (Llama 3)
// Biases are ".bias" in place of ".weight" in both conventions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"

namespace tqlab {

/// One tensor of the recipe.
enum class WeightRole {
  embedding, final_norm, lm_head, rope_freqs,
  input_norm, q, q_bias, k, k_bias, v, v_bias, o, o_bias, q_norm, k_norm, post_norm,
  gate, gate_bias, up, up_bias, down, down_bias,
};

/// Which convention a file's names follow.
enum class NamingConvention { hugging_face, gguf };

/// A family's row of the table.
struct Architecture {
  ModelFamily family;
  const char* hf_class;    ///< config.json "architectures": "LlamaForCausalLM"
  const char* model_type;  ///< config.json "model_type": "llama"
  const char* gguf_name;   ///< GGUF general.architecture (nullptr: no GGUF of its own; Mistral is "llama")
  bool qkv_bias;           ///< always has q/k/v biases (Qwen2)
  bool qk_norm;            ///< per-head RMSNorm of q and k before RoPE (Qwen3)
  /// In GGUF: llama.cpp's converter reordered each head's q/k rows for ggml's adjacent-pair RoPE
  /// (convert_hf_to_gguf.py LlamaModel.permute), which the reader undoes (model/weight_matrix.h).
  bool gguf_interleaved_qk;
};

/// Every architecture tqlab runs, one row each.
std::span<const Architecture> architectures();
/// The row of `family`.
const Architecture& architecture_of(ModelFamily family);
/// The rows' names for a message: "LlamaForCausalLM, MistralForCausalLM, ..." or "llama, qwen2, qwen3".
std::string supported_names(NamingConvention convention);

/// Every role, in the order a checkpoint lists its tensors (embedding, layers, final norm, lm_head).
struct RoleName {
  WeightRole role;
  bool per_layer;
  const char* hf;    ///< fmt pattern with "{}" for the layer; nullptr: not stored in this convention
  const char* gguf;
};
std::span<const RoleName> role_names();

/// The tensor name of `role` (in `layer` for per-layer roles) in `convention`; "" when the convention has none.
std::string weight_name(WeightRole role, int layer, NamingConvention convention);

/// Whether a model of `config` stores `role` (biases, q/k norms and lm_head depend on it; rope_freqs
/// on `config.rope.frequency_factors`).
bool has_role(const ModelConfig& config, WeightRole role);

/// The shape `config` implies for `role`, in C order.
std::vector<std::int64_t> role_shape(const ModelConfig& config, WeightRole role);

/// The tensors `config` implies in `convention`: (role, layer or -1, name, shape), in table order.
struct ExpectedWeight {
  WeightRole role;
  int layer;
  std::string name;
  std::vector<std::int64_t> shape;
};
std::vector<ExpectedWeight> expected_weights(const ModelConfig& config, NamingConvention convention);

}  // namespace tqlab
