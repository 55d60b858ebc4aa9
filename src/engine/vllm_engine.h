// The vllm engine: a vLLM KV-cache preset (`vllm serve --kv-cache-dtype NAME`) applied to a
// model run, spelled "vllm:preset=NAME" (`--engine vllm --preset NAME`). The preset table and
// its sources are quant/vllm_presets.h; this object applies them (docs/ENGINES.md, "vLLM"):
//
// 1. Formats. Keys and values of a quantized layer are the preset's tqlab specs
//    (vllm_tq_key, vllm_uniform, vllm_fp8: each format's bytes and numpy check are
//    in quant/); a run's --k/--v may only repeat them.
// 2. Layers. The TurboQuant presets keep the first and last two layers of a dense
//    model at the model's own precision (TurboQuantConfig.get_boundary_skip_layers,
//    merged into kv_cache_dtype_skip_layers by vllm/engine/arg_utils.py; Attention.__init__
//    gives those layers kv_cache_dtype "auto"). tqlab stores them as fp16, vLLM's dtype for
//    float32 and float16 checkpoints (a bfloat16 checkpoint would keep bf16 there).
// 3. Prefill. TurboQuant (TurboQuantAttentionImpl._prefill_attention in
//    vllm/v1/attention/backends/turboquant_attn.py): a request's first chunk attends its own
//    exact K/V; a later chunk of more than 128 tokens (_CONTINUATION_DECODE_THRESHOLD) its
//    own exact K/V and earlier tokens from the decoded cache; a later chunk of at most 128
//    tokens reads everything, its own tokens too, from the cache. fp8 (TritonAttentionImpl.forward,
//    vllm/v1/attention/backends/triton_attn.py): K and V are written first, attention reads
//    only the cache. tqlab's --prefill maps onto this: "exact C" prefills a chunk in pieces of C
//    tokens, each under vLLM's rule; the default, when a run names none, is one prefill of
//    the chunk ("exact CTX": TurboQuant then reads no quantized key, as vLLM's prompt logprobs);
//    "quantized" lets every query read the cache (what decoding sees).
//    vLLM's --kv-cache-dtype-skip-layers adds layers kept the same way: the option
//    skip=L+L+... ("vllm:preset=fp8,skip=0+5"; vLLM merges them with the boundary layers).
// 4. Attention. Float attention over the decoded cache (tqlab's own path, model/attention.h):
//    vLLM's fp16/bf16 kernels are not modelled, only what the cache holds.
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "quant/vllm_presets.h"

namespace tqlab {

/// The options "vllm:..." takes, for messages.
inline constexpr const char* kVllmEngineOptions = "preset=NAME and skip=L+L+... (layers kept unquantized)";

/// skip=L+L+...: layer numbers (0 .. 65535) joined by '+', returned ascending without repeats;
/// InputError naming the text otherwise.
std::vector<int> parse_vllm_skip_layers(const std::string& text);

class VllmEngine final : public Engine {
 public:
  /// `preset` null: "vllm" without a preset, which parses (for `tqlab list`) but runs nothing.
  /// `skip`: --kv-cache-dtype-skip-layers, ascending.
  VllmEngine(const VllmPreset* preset, std::vector<int> skip) : preset_(preset), skip_(std::move(skip)) {}
  std::string spelling() const override;
  std::string supports() const override;
  std::vector<std::string> presets() const override;
  std::unique_ptr<Engine> with_preset(const std::string& preset) const override;
  void check_run(const EngineRunRequest& request) const override;
  std::unique_ptr<EngineCache> bind(const std::string&, const std::string&, int) const override { return nullptr; }
  EngineSpecs defined_specs() const override;
  std::vector<int> unquantized_layers(int layer_count) const override;
  PrefillRule attention_prefill(PrefillRule requested) const override;
  PrefillRule default_prefill(int ctx) const override { return {ctx}; }

 private:
  const VllmPreset* preset_;
  std::vector<int> skip_;
};

/// The attention rule of `preset` for a run asking for `requested` (see above): fp8 presets
/// "quantized" whatever is asked; TurboQuant "exact C" with later pieces of at most
/// kVllmContinuationDecodeThreshold tokens read from the cache, or "quantized" as asked.
PrefillRule vllm_attention_prefill(const VllmPreset& preset, PrefillRule requested);

}  // namespace tqlab
