#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "model/attention.h"
#include "model/layer_math.h"
#include "model/linear.h"

namespace tqlab {
namespace {

const float* bias_or_null(const std::vector<float>& bias) { return bias.empty() ? nullptr : bias.data(); }

void resize(std::vector<float>& buffer, std::int64_t rows, std::int64_t width) {
  buffer.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(width));
}

}  // namespace

Transformer::Transformer(const WeightSource& source) : source_(&source) {
  const ModelConfig& config = source.config();
  embedding_ = weight_matrix(source.weight(WeightRole::embedding, -1));
  lm_head_ = has_role(config, WeightRole::lm_head) ? weight_matrix(source.weight(WeightRole::lm_head, -1)) : embedding_;
  final_norm_ = weight_vector(source.weight(WeightRole::final_norm, -1));
  for (int layer = 0; layer < config.layers; ++layer) {
    const auto matrix = [&](WeightRole role) { return weight_matrix(source.weight(role, layer)); };
    const auto vector = [&](WeightRole role) {
      return has_role(config, role) ? weight_vector(source.weight(role, layer)) : std::vector<float>{};
    };
    LayerWeights& weights = layers_.emplace_back();
    weights.q = matrix(WeightRole::q);
    weights.k = matrix(WeightRole::k);
    weights.v = matrix(WeightRole::v);
    weights.o = matrix(WeightRole::o);
    weights.gate = matrix(WeightRole::gate);
    weights.up = matrix(WeightRole::up);
    weights.down = matrix(WeightRole::down);
    weights.input_norm = vector(WeightRole::input_norm);
    weights.post_norm = vector(WeightRole::post_norm);
    weights.q_norm = vector(WeightRole::q_norm);
    weights.k_norm = vector(WeightRole::k_norm);
    weights.q_bias = vector(WeightRole::q_bias);
    weights.k_bias = vector(WeightRole::k_bias);
    weights.v_bias = vector(WeightRole::v_bias);
    weights.o_bias = vector(WeightRole::o_bias);
    weights.gate_bias = vector(WeightRole::gate_bias);
    weights.up_bias = vector(WeightRole::up_bias);
    weights.down_bias = vector(WeightRole::down_bias);
  }
}

namespace {

// Sizes the workspace's buffers for a chunk of n tokens (growing, never shrinking).
void size_workspace(const ModelConfig& config, int n, const ForwardOptions& options, ForwardWorkspace& ws) {
  const int dim = config.head_dim;
  const std::int64_t q_width = static_cast<std::int64_t>(config.q_heads) * dim;
  const std::int64_t kv_width = static_cast<std::int64_t>(config.kv_heads) * dim;
  if (ws.rope.tokens < n) ws.rope = make_rope_table(config.rope, dim, n);
  for (auto* buffer : {&ws.x, &ws.h}) resize(*buffer, n, config.hidden_size);
  for (auto* buffer : {&ws.q, &ws.attention}) resize(*buffer, n, q_width);
  for (auto* buffer : {&ws.k, &ws.v}) resize(*buffer, n, kv_width);
  if (options.cache != nullptr) {
    for (auto* buffer : {&ws.k_cache, &ws.v_cache}) resize(*buffer, n, kv_width);
  }
  for (auto* buffer : {&ws.gate, &ws.up}) resize(*buffer, n, config.intermediate_size);
}

// ws.x = the first layer's input: options.first_input, or the tokens' embedding rows (converted one at a time).
void load_first_input(const Transformer& model, std::span<const std::int32_t> tokens, const ForwardOptions& options,
                      ForwardWorkspace& ws, Workers& workers) {
  const ModelConfig& config = model.config();
  const int n = static_cast<int>(tokens.size());
  const int hidden = config.hidden_size;
  if (options.first_layer < 0 || options.first_layer >= config.layers ||
      (options.first_layer > 0) != (options.first_input != nullptr)) {
    throw InternalError(fmt::format("forward: first_layer {} of {} layers, with{} first_input", options.first_layer,
                                    config.layers, options.first_input ? "" : "out"));
  }
  if (options.first_input != nullptr) {
    std::memcpy(ws.x.data(), options.first_input, static_cast<std::size_t>(n) * hidden * sizeof(float));
    return;
  }
  std::vector<float>& row_buffer = workers.floats(0, WorkerBuffer::rows);
  for (int t = 0; t < n; ++t) {
    const std::int32_t id = tokens[static_cast<std::size_t>(t)];
    if (id < 0 || id >= config.vocab_size) {
      throw InternalError(fmt::format("forward: token id {} outside the vocabulary of {}", id, config.vocab_size));
    }
    const float* row = model.embedding().rows_as_float(id, 1, row_buffer);
    std::memcpy(ws.x.data() + static_cast<std::ptrdiff_t>(t) * hidden, row,
                static_cast<std::size_t>(hidden) * sizeof(float));
  }
}

// ws.q, ws.k, ws.v = one layer's queries, keys and values of the normalized input ws.h, after
// q/k norms and RoPE.
void project_qkv(const ModelConfig& config, const LayerWeights& w, int n, ForwardWorkspace& ws, Workers& workers) {
  const int dim = config.head_dim;
  const std::int64_t q_width = static_cast<std::int64_t>(config.q_heads) * dim;
  const std::int64_t kv_width = static_cast<std::int64_t>(config.kv_heads) * dim;
  linear(n, ws.h.data(), w.q, bias_or_null(w.q_bias), ws.q.data(), q_width, workers);
  linear(n, ws.h.data(), w.k, bias_or_null(w.k_bias), ws.k.data(), kv_width, workers);
  linear(n, ws.h.data(), w.v, bias_or_null(w.v_bias), ws.v.data(), kv_width, workers);
  if (config.qk_norm) {
    // Each head's vector normalized over head_dim: rows of dim floats, back to back.
    rms_norm(n * config.q_heads, dim, dim, ws.q.data(), w.q_norm.data(), config.rms_norm_eps, ws.q.data());
    rms_norm(n * config.kv_heads, dim, dim, ws.k.data(), w.k_norm.data(), config.rms_norm_eps, ws.k.data());
  }
  apply_rope(ws.rope, n, config.q_heads, dim, q_width, ws.q.data());
  apply_rope(ws.rope, n, config.kv_heads, dim, kv_width, ws.k.data());
}

// ws.attention = layer `layer`'s attention under `engine` (engine/engine.h); with engine_heads, the
// query heads of the kv heads it leaves out take ws.attention as it was (the exact attention).
void attend_with_engine(const ModelConfig& config, const EngineCache& engine, int layer, int n,
                        const ForwardOptions& options, ForwardWorkspace& ws, float scale) {
  const int dim = config.head_dim;
  const std::int64_t q_width = static_cast<std::int64_t>(config.q_heads) * dim;
  const std::int64_t kv_width = static_cast<std::int64_t>(config.kv_heads) * dim;
  const KvCacheQuantization& cache = *options.cache;
  const EngineAttentionInput input{n,       config.q_heads, config.kv_heads, dim,      scale,        ws.q.data(),
                                   q_width, ws.k.data(),    ws.v.data(),     kv_width, cache.prefill};
  const auto l = static_cast<std::size_t>(layer);
  const std::vector<bool>* heads = cache.engine_heads_of(layer);
  std::vector<float> engine_out(heads != nullptr ? ws.attention.size() : 0);
  float* out = heads != nullptr ? engine_out.data() : ws.attention.data();
  KvCacheBytes& bytes = *options.bytes;
  const std::uint64_t key_before = bytes.key[l], value_before = bytes.value[l];
  engine.attend(input, out, bytes.key[l], bytes.value[l]);
  const auto values = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(kv_width);
  bytes.key_values[l] += values;
  bytes.value_values[l] += values;
  // Every head of an engine's cache holds as many bytes: the layer's, shared out.
  const auto kv_heads = static_cast<std::size_t>(config.kv_heads);
  for (auto* per_head : {&bytes.key_head, &bytes.value_head}) {
    if (per_head->size() <= l) per_head->resize(l + 1);
    (*per_head)[l].resize(kv_heads, 0);
  }
  for (std::size_t g = 0; g < kv_heads; ++g) {
    bytes.key_head[l][g] += (bytes.key[l] - key_before) / kv_heads;
    bytes.value_head[l][g] += (bytes.value[l] - value_before) / kv_heads;
  }
  if (heads == nullptr) return;
  const int group = config.q_heads / config.kv_heads;
  for (int h = 0; h < config.q_heads; ++h) {
    if (!(*heads)[static_cast<std::size_t>(h / group)]) continue;
    for (int t = 0; t < n; ++t) {
      const std::ptrdiff_t at = t * q_width + static_cast<std::ptrdiff_t>(h) * dim;
      std::copy_n(engine_out.data() + at, dim, ws.attention.data() + at);
    }
  }
}

// ws.attention = layer `layer`'s causal attention of ws.q over ws.k, ws.v as options.cache
// stores them: exact (no cache), tqlab's decoded cache, or an engine's own attention.
void attend(const ModelConfig& config, int layer, int n, const ForwardOptions& options, ForwardWorkspace& ws,
            Workers& workers) {
  const int dim = config.head_dim;
  const std::int64_t q_width = static_cast<std::int64_t>(config.q_heads) * dim;
  const std::int64_t kv_width = static_cast<std::int64_t>(config.kv_heads) * dim;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim)));
  const EngineCache* engine = options.cache != nullptr ? options.cache->engine_of(layer) : nullptr;
  if (engine != nullptr && options.cache->engine_heads_of(layer) == nullptr) {
    attend_with_engine(config, *engine, layer, n, options, ws, scale);  // every head the engine's
    return;
  }
  AttentionInput attention;
  attention.tokens = n;
  attention.q_heads = config.q_heads;
  attention.kv_heads = config.kv_heads;
  attention.head_dim = dim;
  attention.scale = scale;
  attention.q = ws.q.data();
  attention.q_stride = q_width;
  attention.k = attention.k_cache = ws.k.data();
  attention.v = attention.v_cache = ws.v.data();
  attention.kv_stride = kv_width;
  if (options.cache != nullptr && engine == nullptr) {
    fill_layer_cache(*options.cache, layer, n, config.kv_heads, dim, kv_width, ws.k.data(), ws.v.data(),
                     ws.k_cache.data(), ws.v_cache.data(), *options.bytes, options.where, workers);
    attention.k_cache = ws.k_cache.data();
    attention.v_cache = ws.v_cache.data();
    if (options.cache->exact.mode == WindowMode::recent) attention.recent_window = options.cache->exact.window;
    attention.prefill = options.cache->prefill;
  }
  causal_attention(attention, ws.attention.data(), workers);
  // Some heads the engine's, the others exact (KvCacheQuantization::engine_heads).
  if (engine != nullptr) attend_with_engine(config, *engine, layer, n, options, ws, scale);
}

// ws.x += the gated MLP of rms_norm(ws.x).
void add_mlp(const ModelConfig& config, const LayerWeights& w, int n, ForwardWorkspace& ws, Workers& workers) {
  const int hidden = config.hidden_size;
  const int inner = config.intermediate_size;
  rms_norm(n, hidden, hidden, ws.x.data(), w.post_norm.data(), config.rms_norm_eps, ws.h.data());
  linear(n, ws.h.data(), w.gate, bias_or_null(w.gate_bias), ws.gate.data(), inner, workers);
  linear(n, ws.h.data(), w.up, bias_or_null(w.up_bias), ws.up.data(), inner, workers);
  silu_multiply(static_cast<std::int64_t>(n) * inner, ws.gate.data(), ws.up.data(), workers);
  linear(n, ws.gate.data(), w.down, bias_or_null(w.down_bias), ws.h.data(), hidden, workers);
  add_in_place(static_cast<std::int64_t>(n) * hidden, ws.x.data(), ws.h.data());
}

}  // namespace

void forward(const Transformer& model, std::span<const std::int32_t> tokens, const ForwardOptions& options,
             ForwardWorkspace& ws, Workers& workers, float* hidden_out) {
  const ModelConfig& config = model.config();
  const int n = static_cast<int>(tokens.size());
  if (options.first_output < 0 || options.first_output >= n) {
    throw InternalError(fmt::format("forward: first_output {} outside a chunk of {} tokens", options.first_output, n));
  }
  const int hidden = config.hidden_size;
  size_workspace(config, n, options, ws);
  load_first_input(model, tokens, options, ws, workers);
  for (int layer = options.first_layer; layer < config.layers; ++layer) {
    const LayerWeights& w = model.layers()[static_cast<std::size_t>(layer)];
    if (options.on_layer_input) options.on_layer_input(layer, ws.x.data());
    rms_norm(n, hidden, hidden, ws.x.data(), w.input_norm.data(), config.rms_norm_eps, ws.h.data());
    project_qkv(config, w, n, ws, workers);
    if (options.on_qkv) options.on_qkv(layer, ws.q.data(), ws.k.data(), ws.v.data());
    attend(config, layer, n, options, ws, workers);
    linear(n, ws.attention.data(), w.o, bias_or_null(w.o_bias), ws.h.data(), hidden, workers);
    add_in_place(static_cast<std::int64_t>(n) * hidden, ws.x.data(), ws.h.data());
    add_mlp(config, w, n, ws, workers);
  }
  const int rows = n - options.first_output;
  rms_norm(rows, hidden, hidden, ws.x.data() + static_cast<std::ptrdiff_t>(options.first_output) * hidden,
           model.final_norm().data(), config.rms_norm_eps, hidden_out);
}

double forward_matmul_flops(const ModelConfig& config, int ctx, int logit_rows) {
  const double hidden = config.hidden_size, dim = config.head_dim, inner = config.intermediate_size;
  const double q_width = config.q_heads * dim, kv_width = config.kv_heads * dim;
  const double weights = hidden * (2 * q_width + 2 * kv_width) + 3 * hidden * inner;
  const double attention = 4.0 * dim * config.q_heads * ctx * (ctx + 1.0) / 2;
  return config.layers * (2.0 * ctx * weights + attention) + 2.0 * logit_rows * config.vocab_size * hidden;
}

void output_logits(const Transformer& model, int rows, const float* hidden, float* logits, Workers& workers) {
  linear(rows, hidden, model.lm_head(), nullptr, logits, model.config().vocab_size, workers);
}

}  // namespace tqlab
