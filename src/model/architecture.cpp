#include "model/architecture.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace tqlab {
namespace {

// Qwen2's GGUF uses ggml's NEOX RoPE (rotate half), so its converter keeps transformers' row order;
// LLAMA uses ggml's NORM RoPE (adjacent pairs) and the converter reorders q/k rows to match
// (llama.cpp: src/llama-model.cpp llama_model_rope_type; convert_hf_to_gguf.py LlamaModel.modify_tensors).
constexpr Architecture kArchitectures[] = {
    {ModelFamily::llama, "LlamaForCausalLM", "llama", "llama", false, false, true},
    {ModelFamily::mistral, "MistralForCausalLM", "mistral", nullptr, false, false, true},
    {ModelFamily::qwen2, "Qwen2ForCausalLM", "qwen2", "qwen2", true, false, false},
    {ModelFamily::qwen3, "Qwen3ForCausalLM", "qwen3", "qwen3", false, true, false},
};

constexpr RoleName kRoleNames[] = {
    {WeightRole::embedding, false, "model.embed_tokens.weight", "token_embd.weight"},
    {WeightRole::rope_freqs, false, nullptr, "rope_freqs.weight"},
    {WeightRole::input_norm, true, "model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {WeightRole::q, true, "model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},
    {WeightRole::q_bias, true, "model.layers.{}.self_attn.q_proj.bias", "blk.{}.attn_q.bias"},
    {WeightRole::k, true, "model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight"},
    {WeightRole::k_bias, true, "model.layers.{}.self_attn.k_proj.bias", "blk.{}.attn_k.bias"},
    {WeightRole::v, true, "model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},
    {WeightRole::v_bias, true, "model.layers.{}.self_attn.v_proj.bias", "blk.{}.attn_v.bias"},
    {WeightRole::o, true, "model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {WeightRole::o_bias, true, "model.layers.{}.self_attn.o_proj.bias", "blk.{}.attn_output.bias"},
    {WeightRole::q_norm, true, "model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight"},
    {WeightRole::k_norm, true, "model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight"},
    {WeightRole::post_norm, true, "model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {WeightRole::gate, true, "model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},
    {WeightRole::gate_bias, true, "model.layers.{}.mlp.gate_proj.bias", "blk.{}.ffn_gate.bias"},
    {WeightRole::up, true, "model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},
    {WeightRole::up_bias, true, "model.layers.{}.mlp.up_proj.bias", "blk.{}.ffn_up.bias"},
    {WeightRole::down, true, "model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},
    {WeightRole::down_bias, true, "model.layers.{}.mlp.down_proj.bias", "blk.{}.ffn_down.bias"},
    {WeightRole::final_norm, false, "model.norm.weight", "output_norm.weight"},
    {WeightRole::lm_head, false, "lm_head.weight", "output.weight"},
};

const RoleName& role_name(WeightRole role) {
  for (const RoleName& entry : kRoleNames) {
    if (entry.role == role) return entry;
  }
  throw InternalError("architecture: a role without a name");
}

}  // namespace

std::span<const Architecture> architectures() { return kArchitectures; }

const Architecture& architecture_of(ModelFamily family) {
  for (const Architecture& entry : kArchitectures) {
    if (entry.family == family) return entry;
  }
  throw InternalError("architecture: a family without a row");
}

std::string supported_names(NamingConvention convention) {
  std::vector<std::string> names;
  for (const Architecture& entry : kArchitectures) {
    const char* name = convention == NamingConvention::gguf ? entry.gguf_name : entry.hf_class;
    if (name != nullptr) names.emplace_back(name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

std::span<const RoleName> role_names() { return kRoleNames; }

std::string weight_name(WeightRole role, int layer, NamingConvention convention) {
  const RoleName& entry = role_name(role);
  const char* pattern = convention == NamingConvention::gguf ? entry.gguf : entry.hf;
  if (pattern == nullptr) return "";
  return entry.per_layer ? fmt::format(fmt::runtime(pattern), layer) : std::string(pattern);
}

bool has_role(const ModelConfig& config, WeightRole role) {
  switch (role) {
    case WeightRole::q_bias: case WeightRole::k_bias: case WeightRole::v_bias: return config.qkv_bias;
    case WeightRole::o_bias: return config.o_bias;
    case WeightRole::gate_bias: case WeightRole::up_bias: case WeightRole::down_bias: return config.mlp_bias;
    case WeightRole::q_norm: case WeightRole::k_norm: return config.qk_norm;
    case WeightRole::lm_head: return !config.tie_word_embeddings;
    case WeightRole::rope_freqs: return config.rope.scaling == RopeConfig::Scaling::factors;
    default: return true;
  }
}

std::vector<std::int64_t> role_shape(const ModelConfig& config, WeightRole role) {
  const std::int64_t hidden = config.hidden_size;
  const std::int64_t q_width = static_cast<std::int64_t>(config.q_heads) * config.head_dim;
  const std::int64_t kv_width = static_cast<std::int64_t>(config.kv_heads) * config.head_dim;
  const std::int64_t inner = config.intermediate_size;
  switch (role) {
    case WeightRole::embedding: case WeightRole::lm_head: return {config.vocab_size, hidden};
    case WeightRole::rope_freqs: return {config.head_dim / 2};
    case WeightRole::input_norm: case WeightRole::post_norm: case WeightRole::final_norm: return {hidden};
    case WeightRole::q: return {q_width, hidden};
    case WeightRole::q_bias: return {q_width};
    case WeightRole::k: case WeightRole::v: return {kv_width, hidden};
    case WeightRole::k_bias: case WeightRole::v_bias: return {kv_width};
    case WeightRole::o: return {hidden, q_width};
    case WeightRole::o_bias: case WeightRole::down_bias: return {hidden};
    case WeightRole::q_norm: case WeightRole::k_norm: return {config.head_dim};
    case WeightRole::gate: case WeightRole::up: return {inner, hidden};
    case WeightRole::gate_bias: case WeightRole::up_bias: return {inner};
    case WeightRole::down: return {hidden, inner};
  }
  throw InternalError("architecture: a role without a shape");
}

std::vector<ExpectedWeight> expected_weights(const ModelConfig& config, NamingConvention convention) {
  std::vector<ExpectedWeight> out;
  const auto add = [&](const RoleName& entry, int layer) {
    if (!has_role(config, entry.role)) return;
    std::string name = weight_name(entry.role, layer, convention);
    if (!name.empty()) out.push_back({entry.role, layer, std::move(name), role_shape(config, entry.role)});
  };
  for (const RoleName& entry : kRoleNames) {
    if (entry.per_layer) continue;
    if (entry.role == WeightRole::final_norm) {
      // Layers come between the embedding (and rope_freqs) and the final norm.
      for (int layer = 0; layer < config.layers; ++layer) {
        for (const RoleName& layer_entry : kRoleNames) {
          if (layer_entry.per_layer) add(layer_entry, layer);
        }
      }
    }
    add(entry, -1);
  }
  return out;
}

}  // namespace tqlab
