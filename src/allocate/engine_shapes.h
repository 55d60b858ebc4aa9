// allocate --engine: the plans an engine can run, solved exactly over the engine's own
// search space on the additive profile, and the flags that run the best one.
//
// An engine cannot load a per-head (or, mostly, a per-layer) plan. What each can express:
//   llama.cpp   one cache type for every layer's keys (--cache-type-k, -ctk) and one for every
//               layer's values (--cache-type-v, -ctv): common/arg.cpp's options, applied to every
//               layer by llama_kv_cache (src/llama-kv-cache.cpp). A quantized V cache needs flash
//               attention (-fa on; llama_init_from_model refuses it otherwise), and the rotation
//               of a quantized cache is on unless LLAMA_ATTN_ROT_DISABLE=1 (engine/llamacpp_engine.h).
//   ik_llama.cpp  per role a base type (-ctk, -ctv) and, optionally, another type for the first N
//               and one for the last M layers (-ctk-first T,N, -ctk-last T,M, -ctv-first, -ctv-last:
//               ik_llama.cpp PR #1599, "Mixed KV cache"). Its numerics are not tqlab's to run: its
//               plans are measured in tqlab's semantics only.
//   vllm        a preset (--kv-cache-dtype: its key and value formats, quant/vllm_presets.h) on
//               every layer but those kept at the model's precision: a TurboQuant preset's first
//               and last 2 always, and any others --kv-cache-dtype-skip-layers names
//               (vllm/engine/arg_utils.py merges the two lists; attention.py gives those layers
//               kv_cache_dtype "auto"). Kept layers are profiled as fp16. Measured in tqlab's
//               semantics (every query reads the quantized cache: what decoding sees; vLLM's
//               TurboQuant prefill attends its own chunk exact).
//   trtllm      one KV cache dtype per layer, keys and values alike, written as ranges over layers
//               ("0-1:fp8,2-3:nvfp4"; KvCacheConfig.dtype of TensorRT-LLM PR #13695, open: its
//               parse_kv_cache_dtype_spec): fp8 (tqlab's fp8_e4m3, one scale per slab, for its
//               per-tensor scale), nvfp4, float16 and bfloat16 (tqlab's fp16, bf16). Measured in
//               tqlab's semantics only.
//   vllm, its layer map  besides the presets: a ModelOpt checkpoint's layer-wise KV recipe (vLLM PR #56116,
//               superseding #52813; RFC #57445), read with --kv-cache-dtype auto from the checkpoint's
//               hf_quant_config.json ("kv_cache_quantized_layers": attention-layer prefix -> quant_algo
//               FP8 or NVFP4, a layer's keys and values alike; fp8_e4m3 and nvfp4 here). A layer left out
//               keeps the model's dtype (profiled as fp16). FP8-K/NVFP4-V in one layer is refused there.
//   modelopt    Model-Optimizer's own search space (PR #2272, mtq.auto_quantize_kv_cache): per layer one
//               (K, V) pair among FP8 K/V, FP8-K/NVFP4-V and NVFP4 K/V, exported as the same file with
//               quant_algo "FP8", "FP8_K_NVFP4_V", "NVFP4". Both measured in tqlab's semantics only.
// llama.cpp's space is small (types x types): every plan is scored on the profile and the least
// predicted damage within the budget is the engine-shaped optimum. ik_llama.cpp's is solved
// exactly by allocate/layer_ranges.h, vLLM's presets by allocate/skip_layers.h, TensorRT-LLM's, vLLM's
// layer map and Model-Optimizer's pairs by allocate/layer_types.h.
// Plans are scored as every allocation is (allocate/allocation.h): the profile measures each
// unit with tqlab's quantizer of the type (bytes identical to the engine's); --verify then
// measures the plan end to end in tqlab's semantics and, for llama.cpp, under the engine itself.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "allocate/allocation.h"
#include "allocate/modelopt_kv_config.h"
#include "allocate/objective.h"
#include "allocate/profile.h"

namespace tqlab {

/// One role's cache types in a plan, as the engine names them.
struct RoleTypes {
  std::string base;         ///< every layer outside the ranges (llama.cpp: every layer)
  std::string first, last;  ///< the first / last layers' type ("" when that range is empty)
  int first_layers = 0, last_layers = 0;
};

/// One plan the engine can run, scored on the profile.
struct EnginePlan {
  RoleTypes k, v;
  std::string preset;            ///< vLLM: the --kv-cache-dtype preset ("" otherwise)
  std::vector<int> skip_layers;  ///< vLLM: layers kept unquantized beyond the preset's own boundary layers
  std::vector<int> kept_layers;  ///< vLLM: every layer kept unquantized (the boundary ones included)
  /// TensorRT-LLM: the engine's dtype of each layer (profile.layers order), keys and values alike
  std::vector<std::string> layer_types;
  std::string layer_ranges;  ///< TensorRT-LLM: layer_types as its range string ("0-1:fp8,2-3:nvfp4")
  ScoredChoice scored;       ///< as a choice of the profile's candidates, predicted
  /// vLLM's layer map, modelopt: a plan read from kModeloptConfigFile (--kv-cache-dtype auto)
  bool layer_map_plan = false;
  /// every layer (profile.layers order) with its quant_algo, "" for a layer left out of the map (the model's dtype)
  std::vector<LayerAlgo> layer_map;
};

struct EngineAllocation {
  /// canonical spelling ("llama.cpp", "llama.cpp:rot=off", "ik_llama.cpp", "vllm", "trtllm", "modelopt")
  std::string engine;
  std::string shape;  ///< what the engine can express, one line
  /// llama.cpp: every plan, by ascending bits; vllm: each preset's best, then the best layer map;
  /// ik_llama.cpp, trtllm, modelopt: the best only (their plans are too many to list: layer_ranges.h,
  /// layer_types.h)
  std::vector<EnginePlan> plans;
  /// index in plans of the plan the engine is told to run: the least predicted damage within the budget,
  /// or with --verify the least measured among the contenders (allocate/measured_pick.h)
  std::optional<std::size_t> best;
  /// with --verify, when the measurement chose another plan: the index of the profile's best
  std::optional<std::size_t> profile_best;
  std::vector<std::size_t> contenders;  ///< with --verify: the plans measured to choose best (best among them)
  std::string invocation;               ///< the engine's flags for the best plan ("-ctk q8_0 -ctv q4_0 -fa on")
  bool runs_itself = false;             ///< tqlab has the engine's numerics (engine/engine.h): --verify runs it
};

/// The engines allocate --engine takes: "llama.cpp", "llama.cpp:rot=off", "ik_llama.cpp", "vllm", "trtllm",
/// "modelopt". `text`'s canonical spelling; InputError naming `option` and listing them otherwise.
std::string canonical_allocation_engine(const std::string& text, const std::string& option);

/// The tqlab engine whose cache types and their spellings `engine` shares (ik_llama.cpp: llama.cpp's,
/// which its own types include; vllm, trtllm: tqlab's, whose specs spell their formats).
std::string engine_of_types(const std::string& engine);

/// The name --verify gives the best plan's run under the engine itself ("llama.cpp itself");
/// the same plan under tqlab's semantics keeps its plan name.
std::string engine_run_name(const EngineAllocation& allocation);

/// The candidates an engine's allocation chooses from by default, as the engine names them: its
/// cache types below 32 bits, bf16 left to f16 (llama.cpp: f16, q8_0, q5_1, q5_0, iq4_nl, q4_1, q4_0);
/// vllm: every format of its presets, as quant/vllm_presets.h spells them, fp16, and its layer map's
/// fp8_e4m3 and nvfp4; trtllm: fp16, fp8_e4m3, nvfp4 (bf16 on request); modelopt: fp8_e4m3, nvfp4.
std::vector<std::string> default_engine_types(const std::string& engine);

/// InputError naming `option` when one of `types` is not a cache type `engine` can be given
/// (trtllm: fp16, bf16, fp8_e4m3, nvfp4; modelopt: fp8_e4m3, nvfp4; the other engines' types are checked
/// by engine/engine.h).
void check_engine_types(const std::string& engine, const std::vector<std::string>& types, const std::string& option);

/// The engine's own names of `types` (trtllm: its dtype strings, "fp8" for fp8_e4m3; the others' as given).
std::vector<std::string> engine_type_names(const std::string& engine, const std::vector<std::string>& types);

/// TensorRT-LLM's range string for a dtype per layer: consecutive layers of one dtype as "A-B:T"
/// (inclusive), a lone layer as "A:T", joined by commas. `layers` are the layer numbers.
std::string trtllm_layer_ranges(const std::vector<int>& layers, const std::vector<std::string>& dtypes);

/// The plan `engine` runs for `choice` (a candidate per unit of `profile`, `engine_types` as
/// allocate_for_engine takes them), scored on the profile and named as the engine's solver names its plans; nullopt
/// when the engine cannot express it: the heads of a layer's role differ, or llama.cpp: a role's layers
/// differ; ik_llama.cpp: a role's layers form more than three runs of one type; vllm: the layers not at
/// fp16 keys and values differ, or no preset has their formats and keeps at most the fp16 layers, and it
/// is no layer map either (a layer's keys and values one of fp8_e4m3, nvfp4, fp16); trtllm: a layer's keys
/// and values differ; modelopt: a layer's pair is not FP8, FP8-K/NVFP4-V or NVFP4.
std::optional<EnginePlan> engine_plan_of(const Profile& profile, const Objective& objective, const std::string& engine,
                                         const std::vector<std::string>& engine_types, const std::vector<int>& choice);

/// The file the engine reads beside the checkpoint for its best plan: kModeloptConfigFile when that plan is a
/// layer map with a quantized layer, else "". Follows engine.best wherever it moves (allocate/measured_pick.h).
std::string engine_loader_file(const EngineAllocation& engine);

/// The engine's own invocation of `plan` (its flags, or TensorRT-LLM's KvCacheConfig line).
std::string engine_invocation(const std::string& engine, const EnginePlan& plan);

/// The plans `engine` can run over `profile`'s candidates, `engine_types[i]` being the engine's
/// name of profile.candidates[i], scored and solved exactly at `budget`.
EngineAllocation allocate_for_engine(const Profile& profile, const Objective& objective, const Budget& budget,
                                     const std::string& engine, const std::vector<std::string>& engine_types);

}  // namespace tqlab
