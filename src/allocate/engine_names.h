// How allocate --engine names the engines it solves for, their types and their plans, and how a vLLM
// preset's plan is built from its kept layers: shared by the engines' solvers
// (allocate/engine_shapes.cpp) and by the plan of a given choice (engine_plan_of,
// allocate/engine_plan_of.cpp), so a plan found either way is the same plan with one name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "allocate/engine_shapes.h"
#include "quant/vllm_presets.h"

namespace tqlab {

inline constexpr const char* kIkLlamaCppEngine = "ik_llama.cpp";
inline constexpr const char* kVllmEngine = "vllm";
inline constexpr const char* kTrtllmEngine = "trtllm";
inline constexpr const char* kModeloptEngine = "modelopt";

/// "llama.cpp" and its options ("llama.cpp:rot=off").
bool is_llamacpp_engine(const std::string& engine);

/// TensorRT-LLM's dtype string for tqlab's spec of one of its KV cache types ("fp8" for fp8_e4m3,
/// "float16" for fp16); empty for a spec it has no dtype for.
std::string_view trtllm_dtype(std::string_view spec);

/// The name of `plan` of `engine`: "llama.cpp -ctk q5_1 -ctv q5_1", "trtllm 0-1:nvfp4,2-3:fp8",
/// "vllm layer map 0:unquantized,1-3:FP8", else the engine and its invocation.
std::string engine_plan_name(const std::string& engine, const EnginePlan& plan);

/// The layers (numbers from `layers`, a model's in order) `preset` keeps at the model's precision
/// whatever the run asks: a TurboQuant preset's boundary layers (vllm_layer_quantized).
std::vector<int> vllm_forced_layers(const VllmPreset& preset, const std::vector<int>& layers);

/// `preset`'s plan keeping `kept` (ascending layer numbers, `forced` among them) unquantized: the
/// layers beyond `forced` are its --kv-cache-dtype-skip-layers. Unscored.
EnginePlan vllm_preset_plan(const VllmPreset& preset, const std::vector<int>& kept, const std::vector<int>& forced);

}  // namespace tqlab
