// How allocate --engine names the engines it solves for, their types and their plans: shared by the
// engines' solvers (allocate/engine_shapes.cpp) and by the plan of a given choice
// (engine_plan_of, allocate/engine_plan_of.cpp), so a plan found either way has one name.
#pragma once

#include <string>
#include <string_view>

#include "allocate/engine_shapes.h"

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

}  // namespace tqlab
