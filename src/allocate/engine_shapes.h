// allocate --engine: the plans an engine can run, solved exactly over the engine's own
// search space on the additive profile, and the flags that run the best one.
//
// An engine cannot load a per-head (or, mostly, a per-layer) plan. What each can express:
//   llama.cpp   one cache type for every layer's keys (--cache-type-k, -ctk) and one for every
//               layer's values (--cache-type-v, -ctv): common/arg.cpp's options, applied to every
//               layer by llama_kv_cache (src/llama-kv-cache.cpp). A quantized V cache needs flash
//               attention (-fa on; llama_init_from_model refuses it otherwise), and the rotation
//               of a quantized cache is on unless LLAMA_ATTN_ROT_DISABLE=1 (engine/llamacpp_engine.h).
// The space is small (types x types), so every plan is scored on the profile and the least
// predicted damage within the budget is the engine-shaped optimum: exact over that space.
// Plans are scored as every allocation is (allocate/allocation.h): the profile measures each
// unit with tqlab's quantizer of the type (bytes identical to the engine's); --verify then
// measures the plan end to end under the engine itself and under tqlab's semantics.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "allocate/allocation.h"
#include "allocate/objective.h"
#include "allocate/profile.h"

namespace tqlab {

/// One plan the engine can run, scored on the profile.
struct EnginePlan {
  std::string k_type, v_type;  ///< the engine's cache type names ("q8_0", "f16")
  ScoredChoice scored;         ///< as a choice of the profile's candidates, predicted
};

struct EngineAllocation {
  std::string engine;               ///< canonical spelling ("llama.cpp", "llama.cpp:rot=off")
  std::string shape;                ///< what the engine can express, one line
  std::vector<EnginePlan> plans;    ///< every plan, by ascending bits then K type then V type
  std::optional<std::size_t> best;  ///< index in plans of the least predicted damage within the budget
  std::string invocation;           ///< the engine's flags for the best plan ("-ctk q8_0 -ctv q4_0 -fa on")
};

/// The name --verify gives the best plan's run under the engine itself ("llama.cpp itself");
/// the same plan under tqlab's semantics keeps its plan name.
std::string engine_run_name(const EngineAllocation& allocation);

/// The candidates an engine's allocation chooses from by default: its cache types below 32 bits,
/// one of each width class (llama.cpp: f16, q8_0, q5_1, q5_0, iq4_nl, q4_1, q4_0), as the
/// engine names them.
std::vector<std::string> default_engine_types(const std::string& engine);

/// Every plan `engine` can run over `profile`'s candidates, `engine_types[i]` being the engine's
/// name of profile.candidates[i], scored and solved at `budget`. InputError naming the engine when
/// it has no allocation shape (tqlab's own is the per-unit allocation itself).
EngineAllocation allocate_for_engine(const Profile& profile, const Objective& objective, const Budget& budget,
                                     const std::string& engine, const std::vector<std::string>& engine_types);

}  // namespace tqlab
