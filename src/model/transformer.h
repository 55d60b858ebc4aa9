// The float32 teacher-forced prefill of one chunk, with transformers'
// semantics for the Llama family (model/model_config.h):
//
//   x = embed_tokens[tokens]                                     tokens x hidden
//   for each layer:
//     h = rms_norm(x, input_layernorm)
//     q = h Wq^T (+bq), k = h Wk^T (+bk), v = h Wv^T (+bv)      tokens x heads * head_dim
//     (Qwen3) q, k = rms_norm per head over head_dim (q_norm, k_norm)
//     q, k = rope(q), rope(k)                                    model/rope.h
//     [on_qkv(layer, q, k, v)]                                   post-RoPE, before the cache
//     k~, v~ = the cache (exact, or model/kv_hook.h)
//     x += o_proj(causal_attention(q, k~, v~))                   model/attention.h
//     h = rms_norm(x, post_attention_layernorm)
//     x += down_proj(silu(gate_proj(h)) * up_proj(h))
//   out = rms_norm(x, norm)        (the rows asked for)
// and output_logits(out) = out lm_head^T (the embedding matrix when tied).
//
// Matrix products are sgemm on fixed blocks (model/linear.h,
// model/attention.h), element-wise steps per row: the same floats for any
// thread count. Activations for ctx tokens: x, h, q, k, v, the cache, the
// attention output (each tokens x width) and gate/up (tokens x intermediate),
// reused across layers and chunks in a ForwardWorkspace.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "model/kv_hook.h"
#include "model/rope.h"
#include "model/weight_matrix.h"
#include "model/weight_source.h"
#include "model/workers.h"

namespace tqlab {

struct LayerWeights {
  WeightMatrix q, k, v, o, gate, up, down;
  std::vector<float> input_norm, post_norm, q_norm, k_norm;  ///< q_norm, k_norm: Qwen3 only
  std::vector<float> q_bias, k_bias, v_bias, o_bias;         ///< empty when absent
  std::vector<float> gate_bias, up_bias, down_bias;
};

/// A model's weights resolved for the forward pass, by role (model/architecture.h), whatever file
/// format holds them: matrices stay mapped, the small vectors (norms, biases) are converted once.
/// Points into the source, which must outlive it.
class Transformer {
 public:
  explicit Transformer(const WeightSource& source);

  const WeightSource& source() const { return *source_; }
  const ModelConfig& config() const { return source_->config(); }
  const WeightMatrix& embedding() const { return embedding_; }
  const WeightMatrix& lm_head() const { return lm_head_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  const std::vector<float>& final_norm() const { return final_norm_; }

 private:
  const WeightSource* source_;
  WeightMatrix embedding_, lm_head_;
  std::vector<LayerWeights> layers_;
  std::vector<float> final_norm_;
};

/// Buffers of forward(), kept between chunks.
struct ForwardWorkspace {
  RopeTable rope;
  std::vector<float> x, h, q, k, v, k_cache, v_cache, attention, gate, up;
};

/// What a forward pass does besides the plain prefill.
struct ForwardOptions {
  const KvCacheQuantization* cache = nullptr;  ///< null: the cache holds exact keys and values
  KvCacheBytes* bytes = nullptr;               ///< where the hook adds its packed bytes (with `cache`)
  /// Post-RoPE q (tokens x q_heads * head_dim), k and v (tokens x kv_heads * head_dim) of each layer,
  /// token-major, before the cache sees them.
  std::function<void(int layer, const float* q, const float* k, const float* v)> on_qkv;
  int first_output = 0;  ///< final hidden states of positions [first_output, tokens) are returned
  std::string where;     ///< prefixes hook errors: "model 'DIR', chunk 3"
  /// The residual stream entering each layer (tokens x hidden_size floats), before its input norm.
  std::function<void(int layer, const float* x)> on_layer_input;
  /// Start at layer `first_layer` from `first_input` (tokens x hidden_size floats: what on_layer_input saw
  /// entering that layer in a forward of the same tokens), skipping the embedding and the layers before it.
  /// The caller vouches that those layers would compute the same floats again (their cache is exact): the
  /// result is then the very floats of a whole forward. 0 (with first_input null): the whole forward.
  int first_layer = 0;
  const float* first_input = nullptr;
};

/// Runs the chunk `tokens` (ids < vocab_size; 0 <= first_output < tokens; 0 <= first_layer < layers, with
/// first_input when first_layer > 0). hidden_out: (tokens - first_output) x hidden_size floats, the
/// final-normed hidden states of the positions asked for.
void forward(const Transformer& model, std::span<const std::int32_t> tokens, const ForwardOptions& options,
             ForwardWorkspace& workspace, Workers& workers, float* hidden_out);

/// Flops (2 per multiply-add) of the matrix products of one forward of `ctx`
/// tokens with logits for `logit_rows` of them, the work that counts against
/// the sgemm ceiling: per layer 2 ctx (q, k, v, o, gate, up, down weights) and
/// the causal attention products, 4 head_dim q_heads ctx (ctx + 1) / 2 (only
/// the keys each query reads); then 2 logit_rows vocab hidden for lm_head.
double forward_matmul_flops(const ModelConfig& config, int ctx, int logit_rows);

/// logits = hidden lm_head^T: hidden rows x hidden_size, logits rows x vocab_size floats.
void output_logits(const Transformer& model, int rows, const float* hidden, float* logits, Workers& workers);

}  // namespace tqlab
