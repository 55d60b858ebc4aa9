#include "allocate/engine_names.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace tqlab {
namespace {

// TensorRT-LLM's dtype strings for tqlab's specs of its KV cache types: "fp8" and "nvfp4" as
// KvCacheConfig.dtype takes them, the 16-bit types as tensorrt_llm/_utils.py's dtype table spells them.
constexpr std::pair<std::string_view, std::string_view> kTrtllmDtypes[] = {
    {"fp16", "float16"}, {"bf16", "bfloat16"}, {"fp8_e4m3", "fp8"}, {"nvfp4", "nvfp4"}};

}  // namespace

bool is_llamacpp_engine(const std::string& engine) { return engine.rfind("llama.cpp", 0) == 0; }

std::string_view trtllm_dtype(std::string_view spec) {
  for (const auto& [ours, theirs] : kTrtllmDtypes) {
    if (ours == spec) return theirs;
  }
  return {};
}

std::string engine_plan_name(const std::string& engine, const EnginePlan& plan) {
  if (plan.layer_map_plan) {  // "vllm layer map 0-1:NVFP4,2:FP8,3:unquantized"
    std::vector<int> layers;
    std::vector<std::string> algos;
    for (const LayerAlgo& entry : plan.layer_map) {
      layers.push_back(entry.layer);
      algos.push_back(entry.quant_algo.empty() ? "unquantized" : entry.quant_algo);
    }
    return fmt::format("{} layer map {}", engine, trtllm_layer_ranges(layers, algos));
  }
  if (is_llamacpp_engine(engine)) return fmt::format("{} -ctk {} -ctv {}", engine, plan.k.base, plan.v.base);
  if (engine == kTrtllmEngine) return "trtllm " + plan.layer_ranges;
  return engine + " " + engine_invocation(engine, plan);
}

std::vector<int> vllm_forced_layers(const VllmPreset& preset, const std::vector<int>& layers) {
  std::vector<int> forced;
  const int count = static_cast<int>(layers.size());
  for (int at = 0; at < count; ++at) {
    if (!vllm_layer_quantized(preset, at, count)) forced.push_back(layers[static_cast<std::size_t>(at)]);
  }
  return forced;
}

EnginePlan vllm_preset_plan(const VllmPreset& preset, const std::vector<int>& kept, const std::vector<int>& forced) {
  EnginePlan plan;
  plan.preset = preset.name;
  plan.k.base = preset.key_spec;
  plan.v.base = preset.value_spec;
  plan.kept_layers = kept;
  for (const int layer : kept) {
    if (std::find(forced.begin(), forced.end(), layer) == forced.end()) plan.skip_layers.push_back(layer);
  }
  return plan;
}

}  // namespace tqlab
