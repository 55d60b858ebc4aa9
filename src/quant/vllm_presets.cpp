// vLLM's KV cache presets (table and sources in vllm_presets.h).
#include "quant/vllm_presets.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "core/error.h"
#include "core/text.h"

namespace tqlab {

const std::vector<VllmPreset>& vllm_presets() {
  static const std::vector<VllmPreset> presets = {
      {"turboquant_k8v4", "vllm_fp8", "vllm_uniform:b=4", true, VllmPrefill::own_chunk_exact},
      {"turboquant_4bit_nc", "vllm_tq_key:b=4,nc", "vllm_uniform:b=4", true, VllmPrefill::own_chunk_exact},
      {"turboquant_k3v4_nc", "vllm_tq_key:b=3,nc", "vllm_uniform:b=4", true, VllmPrefill::own_chunk_exact},
      {"turboquant_3bit_nc", "vllm_tq_key:b=3,nc", "vllm_uniform:b=3", true, VllmPrefill::own_chunk_exact},
      {"fp8", "vllm_fp8", "vllm_fp8", false, VllmPrefill::all_from_cache},
      {"fp8_per_token_head", "vllm_fp8:scale=token_head", "vllm_fp8:scale=token_head", false,
       VllmPrefill::all_from_cache},
  };
  return presets;
}

const VllmPreset& find_vllm_preset(std::string_view name) {
  std::vector<std::string_view> names;
  for (const VllmPreset& preset : vllm_presets()) {
    if (preset.name == name) return preset;
    names.push_back(preset.name);
  }
  fail("unknown vLLM preset '{}' (known: {})", printable(name), fmt::join(names, ", "));
}

bool vllm_layer_quantized(const VllmPreset& preset, int layer, int layer_count, const std::vector<int>& skipped) {
  if (layer < 0 || layer >= layer_count) {
    throw InternalError(fmt::format("vLLM preset {}: layer {} of {}", preset.name, layer, layer_count));
  }
  if (std::find(skipped.begin(), skipped.end(), layer) != skipped.end()) return false;
  if (!preset.protects_boundary_layers) return true;
  // get_boundary_skip_layers never skips more than half the layers on either side.
  const int boundary = std::min(kVllmBoundaryLayers, layer_count / 2);
  return layer >= boundary && layer < layer_count - boundary;
}

bool vllm_chunk_reads_own_tokens_exact(const VllmPreset& preset, std::int64_t cached_tokens,
                                        std::int64_t chunk_tokens) {
  if (chunk_tokens < 1 || cached_tokens < 0) {
    throw InternalError(fmt::format("vLLM preset {}: a chunk of {} tokens after {}", preset.name, chunk_tokens,
                                    cached_tokens));
  }
  if (preset.prefill == VllmPrefill::all_from_cache) return false;
  return cached_tokens == 0 || chunk_tokens > kVllmContinuationDecodeThreshold;
}

}  // namespace tqlab
