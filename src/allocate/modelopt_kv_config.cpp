#include "allocate/modelopt_kv_config.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tqlab_version.h"

namespace tqlab {

std::string modelopt_quant_algo(const std::string& key_spec, const std::string& value_spec) {
  if (key_spec == "fp8_e4m3" && value_spec == "fp8_e4m3") return "FP8";
  if (key_spec == "nvfp4" && value_spec == "nvfp4") return "NVFP4";
  if (key_spec == "fp8_e4m3" && value_spec == "nvfp4") return "FP8_K_NVFP4_V";
  return "";
}

std::string attention_layer_prefix(int layer) { return fmt::format("model.layers.{}.self_attn", layer); }

nlohmann::ordered_json modelopt_kv_config(const std::vector<LayerAlgo>& layer_map) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::object();
  for (const LayerAlgo& entry : layer_map) {
    if (!entry.quant_algo.empty()) layers[attention_layer_prefix(entry.layer)] = {{"quant_algo", entry.quant_algo}};
  }
  if (layers.empty()) throw InternalError("modelopt_kv_config: a layer map without a quantized layer");
  // MIXED_PRECISION even when every layer has one format: the envelope Model-Optimizer's KV-only export
  // uses and vLLM PR #52813 accepts for a uniform map too.
  return {{"producer", {{"name", "modelopt"}, {"version", fmt::format("tqlab {}", TQLAB_VERSION)}}},
          {"quantization",
           {{"kv_cache_quant_algo", "MIXED_PRECISION"},
            {"kv_cache_quantized_layers", std::move(layers)},
            {"kv_cache_schema_version", 1}}}};
}

}  // namespace tqlab
