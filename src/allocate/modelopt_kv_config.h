// The file a layer-wise KV recipe ships in: a Model-Optimizer checkpoint's hf_quant_config.json, as
// Model-Optimizer PR #2272 exports it for a KV-only recipe and vLLM PR #56116 reads it with
// --kv-cache-dtype auto:
//   {"producer": {"name": "modelopt", "version": V},
//    "quantization": {"kv_cache_quant_algo": "MIXED_PRECISION",
//                     "kv_cache_quantized_layers": {"model.layers.0.self_attn": {"quant_algo": "FP8"}, ...},
//                     "kv_cache_schema_version": 1}}
// An entry is an attention layer's prefix (the Hugging Face Llama/Mistral/Qwen module name) and its
// keys' and values' format: "FP8" (FP8 E4M3 both), "NVFP4" (NVFP4 both) or "FP8_K_NVFP4_V" (keys FP8,
// values NVFP4; Model-Optimizer's spelling, its convert_hf_quant_config_format tests). A layer left out
// keeps the model's own dtype. Model-Optimizer's convert_hf_quant_config_format turns the same keys into
// config.json's quantization_config with quant_method "modelopt". The file carries the recipe only: the
// per-layer K/V scales are tensors of the checkpoint, which a Model-Optimizer calibration writes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tqlab {

/// One layer's entry in kv_cache_quantized_layers.
struct LayerAlgo {
  int layer = 0;           ///< the layer number (profile.layers)
  std::string quant_algo;  ///< "FP8", "NVFP4" or "FP8_K_NVFP4_V"
};

/// The file a layer-map plan puts beside the checkpoint.
inline constexpr const char* kModeloptConfigFile = "hf_quant_config.json";

/// Model-Optimizer's quant_algo for a layer whose keys are `key_spec` and values `value_spec` (tqlab specs):
/// "FP8" (fp8_e4m3 both), "NVFP4" (nvfp4 both), "FP8_K_NVFP4_V" (fp8_e4m3 keys, nvfp4 values); "" otherwise.
std::string modelopt_quant_algo(const std::string& key_spec, const std::string& value_spec);

/// The attention layer's module prefix in a Hugging Face Llama-family checkpoint: "model.layers.N.self_attn".
std::string attention_layer_prefix(int layer);

/// The hf_quant_config.json above for `layer_map` (ascending layers; an entry whose quant_algo is "" is a layer
/// left out; at least one is not), the producer's version naming tqlab's ("tqlab 0.1.0"): the schema is
/// Model-Optimizer's, so its producer name.
nlohmann::ordered_json modelopt_kv_config(const std::vector<LayerAlgo>& layer_map);

}  // namespace tqlab
