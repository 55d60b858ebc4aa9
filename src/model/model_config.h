// A Hugging Face causal-LM config.json, read into what the forward pass
// needs, for the decoder-only families tqlab runs (Llama, Mistral, Qwen2,
// Qwen3) and nothing else.
//
// What each family means (transformers' modeling_{llama,mistral,qwen2,qwen3}.py):
//   LlamaForCausalLM    RMSNorm pre-norm, rotate-half RoPE (rope_scaling absent,
//                       "linear" or "llama3"), grouped-query attention, SwiGLU;
//                       attention_bias puts biases on q/k/v/o, mlp_bias on gate/up/down.
//   MistralForCausalLM  Llama's layers without biases, plus sliding-window
//                       attention (refused where it would act: ctx > sliding_window).
//   Qwen2ForCausalLM    biases on q/k/v (not o); sliding windows only with
//                       use_sliding_window (refused where they would act).
//   Qwen3ForCausalLM    per-head RMSNorm of q and k (over head_dim) before RoPE,
//                       head_dim explicit (default 128, not hidden/heads);
//                       attention_bias puts biases on q/k/v/o.
// Optional keys default as the family's transformers config class defaults
// them. Anything the forward pass does not implement (another architecture,
// hidden_act other than silu, another rope type, partial rotary factors,
// quantized weights) is an InputError naming the key, its value and what is
// supported; a key the forward does not read is ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tqlab {

enum class ModelFamily { llama, mistral, qwen2, qwen3 };

/// How RoPE's inverse frequencies are derived from theta (modeling_rope_utils.py).
struct RopeConfig {
  /// factors: a GGUF's rope_freqs tensor, one divisor per frequency (llama.cpp's freq_factors, what its
  /// converter writes for Llama 3 scaling: convert_hf_to_gguf.py LlamaModel.generate_extra_tensors).
  enum class Scaling { none, linear, llama3, factors };
  double theta = 10000.0;
  Scaling scaling = Scaling::none;
  double factor = 1.0;  ///< linear, llama3: frequencies divided by it (llama3: the low ones)
  double low_freq_factor = 1.0;   ///< llama3
  double high_freq_factor = 4.0;  ///< llama3
  double original_max_position_embeddings = 8192;  ///< llama3: the context the model was trained at
  std::vector<float> frequency_factors;            ///< factors: head_dim / 2 divisors of inv_freq
};

struct ModelConfig {
  std::string path;          ///< the config.json (or GGUF file) it was read from
  std::string architecture;  ///< "LlamaForCausalLM", as config.json names it; a GGUF's general.architecture
  ModelFamily family = ModelFamily::llama;
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int layers = 0;
  int q_heads = 0;
  int kv_heads = 0;   ///< q head h reads kv head h / (q_heads / kv_heads)
  int head_dim = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  bool tie_word_embeddings = false;  ///< lm_head is the embedding matrix
  bool qkv_bias = false;             ///< q_proj, k_proj, v_proj have biases
  bool o_bias = false;               ///< o_proj has a bias
  bool mlp_bias = false;             ///< gate_proj, up_proj, down_proj have biases
  bool qk_norm = false;              ///< Qwen3: q_norm, k_norm over head_dim before RoPE
  std::optional<std::int64_t> bos_token_id;
  /// The smallest sliding window of any layer that has one, and where it was configured.
  std::optional<std::int64_t> sliding_window;
  std::string sliding_window_key;
  std::int64_t max_position_embeddings = 0;

  /// Query heads per kv head.
  int group() const { return q_heads / kv_heads; }
};

/// "llama", "mistral", "qwen2", "qwen3".
const char* family_name(ModelFamily family);

/// Reads and validates `path` (a config.json). InputError "model config 'PATH': KEY: ..." naming what is wrong.
ModelConfig read_model_config(const std::string& path);

/// The same for an already parsed document, as if read from `path`.
ModelConfig parse_model_config(const nlohmann::json& document, const std::string& path);

/// Refuses a context the model would not attend as one causal window: ctx
/// tokens beyond a layer's sliding window (tqlab attends every earlier token of
/// a chunk). `option` names the option in the message ("--ctx"). A context past
/// max_position_embeddings runs, with a warning (once per process).
void check_context(const ModelConfig& config, std::int64_t ctx, const char* option);

}  // namespace tqlab
