// vLLM's KV cache presets (`--kv-cache-dtype NAME` in vLLM): for each, the
// tqlab specs of its key and value formats, which layers vLLM leaves
// unquantized, and what a prefill chunk reads. This table is the one thing an
// engine that imitates vLLM needs (docs/SOURCES.md, "vLLM's KV cache presets", says where each rule comes from).
//
// | preset              | keys                 | values            | unquantized layers      | a chunk's own tokens |
// |---------------------|----------------------|-------------------|-------------------------|----------------------|
// | turboquant_k8v4     | vllm_fp8             | vllm_uniform:b=4  | first 2 and last 2      | exact, see below     |
// | turboquant_4bit_nc  | vllm_tq_key:b=4,nc   | vllm_uniform:b=4  | first 2 and last 2      | exact, see below     |
// | turboquant_k3v4_nc  | vllm_tq_key:b=3,nc   | vllm_uniform:b=4  | first 2 and last 2      | exact, see below     |
// | turboquant_3bit_nc  | vllm_tq_key:b=3,nc   | vllm_uniform:b=3  | first 2 and last 2      | exact, see below     |
// | fp8                 | vllm_fp8             | vllm_fp8          | none                    | from the cache       |
// | fp8_per_token_head  | vllm_fp8:scale=token_head (both)         | none                    | from the cache       |
//
// Sources: the TurboQuant presets are TQ_PRESETS in
// vllm/model_executor/layers/quantization/turboquant/config.py (key_quant_bits 8
// means fp8 keys; norm_correction is the `nc` flag); the boundary layers are
// TurboQuantConfig.get_boundary_skip_layers (n = 2, dense models), merged by
// vllm/engine/arg_utils.py into --kv-cache-dtype-skip-layers, which
// vllm/model_executor/layers/attention/attention.py (Attention.__init__) turns
// into kv_cache_dtype "auto" (the model's own dtype) for those layers. The
// prefill rules are TurboQuantAttentionImpl._prefill_attention in
// vllm/v1/attention/backends/turboquant_attn.py and, for fp8,
// TritonAttentionImpl.forward in vllm/v1/attention/backends/triton_attn.py
// (K and V are written to the cache first, then attention reads only the cache).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tqlab {

/// How a preset's attention treats the tokens of the chunk being prefilled.
enum class VllmPrefill : std::uint8_t {
  /// TurboQuant: a request's first chunk attends its own exact K/V; a later chunk of
  /// more than kVllmContinuationDecodeThreshold tokens attends its own exact K/V and
  /// the cache (decoded) for earlier tokens; a later chunk of at most that many
  /// tokens — a decode step included — reads every token, its own too, from the cache.
  own_chunk_exact,
  /// fp8 caches: every query reads every key and value from the cache, its own included.
  all_from_cache,
};

/// TurboQuant's _CONTINUATION_DECODE_THRESHOLD: continuation chunks up to this many
/// tokens run its decode kernel over the quantized cache.
inline constexpr std::int64_t kVllmContinuationDecodeThreshold = 128;

/// Layers at each end of a dense model that the TurboQuant presets leave
/// unquantized (get_boundary_skip_layers' n).
inline constexpr int kVllmBoundaryLayers = 2;

struct VllmPreset {
  std::string_view name;        ///< vLLM's --kv-cache-dtype value
  std::string_view key_spec;    ///< tqlab spec of the quantized layers' keys
  std::string_view value_spec;  ///< tqlab spec of the quantized layers' values
  bool protects_boundary_layers;  ///< first and last kVllmBoundaryLayers layers stay unquantized
  VllmPrefill prefill;
};

/// Every preset, in the order of the table above.
const std::vector<VllmPreset>& vllm_presets();

/// The preset named `name`; InputError naming `name` and listing every preset otherwise.
const VllmPreset& find_vllm_preset(std::string_view name);

/// True when vLLM quantizes layer `layer` (0-based) of a dense model of
/// `layer_count` layers under `preset`, the user's --kv-cache-dtype-skip-layers
/// being `skipped` (layer indices; vLLM merges them with the boundary layers).
/// A TurboQuant preset leaves the first and last min(2, layer_count / 2) layers
/// unquantized: all 4 layers of a 4-layer model, layers 0 and 2 of a 3-layer
/// one, none of a 1-layer one. An unquantized layer keeps the model's own dtype.
/// InternalError unless 0 <= layer < layer_count.
bool vllm_layer_quantized(const VllmPreset& preset, int layer, int layer_count, const std::vector<int>& skipped = {});

/// True when the queries of a chunk of `chunk_tokens` tokens, arriving with
/// `cached_tokens` earlier tokens of the same sequence in the cache, attend the
/// chunk's own keys and values exact (else they read them back from the cache).
/// Earlier tokens are always read from the cache. chunk_tokens >= 1, cached_tokens >= 0.
bool vllm_chunk_reads_own_tokens_exact(const VllmPreset& preset, std::int64_t cached_tokens,
                                        std::int64_t chunk_tokens);

}  // namespace tqlab
