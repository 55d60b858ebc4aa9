// The KV hook: what a run does to each layer's keys and values between RoPE
// and attention.
//
// Each (layer, kv head) of a chunk is fake-quantized as one tensor of the
// chunk's tokens with the very fake_quantize_rows a sweep uses on a dump
// (kv/fake_quantize.h), in the same context {seed, role, layer number, kv
// head}: one rotation per (layer, head), shared by every chunk, as a cache
// keeps one whatever sequence it serves. Which tokens stay exact is the
// sweep's rule (metrics/attention_geometry.h, ExactTokens, with each chunk one
// sequence): the first `sink` tokens and, with window_mode tail, the chunk's
// last W tokens are restored exact in the cache every query reads; with
// window_mode recent, query t reads keys and values t-W+1..t exact
// (model/attention.h), as a cache holding its W most recent tokens
// unquantized while decoding.
//
// A real cache filled token by token would quantize each token as it arrives;
// quantizers whose decoded vectors depend on other tokens (fp8's per-tensor
// scale, KIVI's per-channel groups of `group` tokens, tq's center=channel and
// outliers) see the whole chunk here, as a cache filled by one prefill of the
// chunk would hold it (docs/REFERENCE.md, ppl).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "metrics/attention_geometry.h"
#include "model/workers.h"
#include "quant/quantizer.h"

namespace tqlab {

/// How one run fake-quantizes the cache.
struct KvCacheQuantization {
  /// The quantizer of each [layer][kv head], for keys and for values (not owned).
  std::vector<std::vector<const Quantizer*>> key, value;
  ExactTokens exact;       ///< sinks and window, sweep semantics
  std::uint64_t seed = 0;  ///< the run's seed (QuantContext::seed)
  /// An engine's own attention per [layer] (engine/engine.h; not owned): a layer with one runs it and
  /// its quantizers are unused; a null entry, or an empty table, is tqlab's path for that layer
  /// (fill_layer_cache and causal_attention).
  std::vector<const EngineCache*> engine;
  /// [layer][kv head] (empty: every head): the kv heads of an engine's layer whose query heads read
  /// the engine's attention; the others read the layer's keys and values exact (tqlab's attention
  /// without a cache): a unit of a model profile measured per head in an engine's numerics.
  std::vector<std::vector<bool>> engine_heads;
  PrefillRule prefill;  ///< which keys of its own prefill piece a query reads exact

  /// The engine attending layer `layer`, or null.
  const EngineCache* engine_of(int layer) const {
    const auto l = static_cast<std::size_t>(layer);
    return l < engine.size() ? engine[l] : nullptr;
  }
  /// The kv heads of layer `layer` the engine serves (engine_heads), or null when it serves every head.
  const std::vector<bool>* engine_heads_of(int layer) const {
    const auto l = static_cast<std::size_t>(layer);
    return l < engine_heads.size() && !engine_heads[l].empty() ? &engine_heads[l] : nullptr;
  }
};

/// Packed bytes the quantizers emitted, per layer, summed over heads and chunks.
struct KvCacheBytes {
  std::vector<std::uint64_t> key, value;                ///< [layer]
  std::vector<std::uint64_t> key_values, value_values;  ///< [layer]: values quantized
  /// [layer][kv head]: the same bytes per head (sized by fill_layer_cache for the layers it fills).
  std::vector<std::vector<std::uint64_t>> key_head, value_head;
};

/// Fills the cache of one layer: k_cache, v_cache (tokens x stride floats,
/// kv head g at column g * head_dim, like k and v) become the decoded keys and
/// values, with sinks (and a tail window) copied back exact. Adds the packed
/// bytes to `bytes`. `where` prefixes a quantizer's error ("model 'DIR', chunk 3").
void fill_layer_cache(const KvCacheQuantization& quantization, int layer, int tokens, int kv_heads, int head_dim,
                      std::int64_t stride, const float* k, const float* v, float* k_cache, float* v_cache,
                      KvCacheBytes& bytes, const std::string& where, Workers& workers);

}  // namespace tqlab
