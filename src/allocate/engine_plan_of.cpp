// engine_plan_of (allocate/engine_shapes.h): the plan an engine runs for a given choice, or that it
// cannot run it. Each shape read backwards: llama.cpp one type per role; ik_llama.cpp at most three
// runs of one type per role over the layers; vLLM the fp16 layers kept and one preset's formats on
// the others, or its layer map; Model-Optimizer's pairs per layer; TensorRT-LLM keys and values alike
// per layer. --verify's measured pick (allocate/measured_pick.h) asks it which rows an engine can run.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "allocate/engine_names.h"
#include "allocate/engine_shapes.h"
#include "allocate/modelopt_kv_config.h"
#include "core/error.h"
#include "quant/vllm_presets.h"

namespace tqlab {
namespace {

// A layer's key and value candidates, when every head of each role has one.
struct LayerPair {
  int k = -1, v = -1;
  bool operator==(const LayerPair&) const = default;
};

// `choice` as a key and value candidate per layer (profile.layers order); nullopt when a role's heads differ.
std::optional<std::vector<LayerPair>> layer_pairs(const Profile& profile, const std::vector<int>& choice) {
  std::vector<LayerPair> pairs(profile.layers.size());
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    const AllocationUnit& unit = profile.units[u].unit;
    const auto at = std::find(profile.layers.begin(), profile.layers.end(), unit.layer);
    if (at == profile.layers.end()) throw InternalError("engine_plan_of: a unit of a layer the profile lacks");
    int& slot = unit.role == Role::key ? pairs[static_cast<std::size_t>(at - profile.layers.begin())].k
                                       : pairs[static_cast<std::size_t>(at - profile.layers.begin())].v;
    if (slot >= 0 && slot != choice[u]) return std::nullopt;
    slot = choice[u];
  }
  return pairs;
}

// A role's candidate per layer as ik_llama.cpp's ranges: at most three runs of one type (the first N
// layers, the base, the last M); of two runs the longer is the base (on a tie the second).
std::optional<RoleTypes> as_layer_ranges(const std::vector<int>& types, const std::vector<std::string>& names) {
  std::vector<std::pair<int, int>> runs;  // (type, length)
  for (const int type : types) {
    if (runs.empty() || runs.back().first != type) runs.emplace_back(type, 0);
    ++runs.back().second;
  }
  if (runs.empty() || runs.size() > 3) return std::nullopt;
  const auto name = [&](int type) { return names[static_cast<std::size_t>(type)]; };
  RoleTypes out;
  if (runs.size() == 2 && runs[0].second > runs[1].second) {
    out.base = name(runs[0].first);
    out.last = name(runs[1].first);
    out.last_layers = runs[1].second;
    return out;
  }
  const std::size_t base = runs.size() == 1 ? 0 : 1;
  out.base = name(runs[base].first);
  if (base == 1) {
    out.first = name(runs[0].first);
    out.first_layers = runs[0].second;
  }
  if (runs.size() == 3) {
    out.last = name(runs[2].first);
    out.last_layers = runs[2].second;
  }
  return out;
}

// vLLM: the layers at fp16 keys and values are kept, the others share one preset's formats, and the
// preset keeps no layer outside the kept ones.
std::optional<EnginePlan> vllm_plan_of(const Profile& profile, const std::vector<LayerPair>& pairs,
                                       const std::vector<std::string>& types) {
  const auto fp16 = std::find(types.begin(), types.end(), "fp16");
  if (fp16 == types.end()) return std::nullopt;
  const int unquantized = static_cast<int>(fp16 - types.begin());
  std::optional<LayerPair> quantized;
  std::vector<int> kept;
  for (std::size_t at = 0; at < pairs.size(); ++at) {
    if (pairs[at] == LayerPair{unquantized, unquantized}) {
      kept.push_back(profile.layers[at]);
    } else if (quantized && !(*quantized == pairs[at])) {
      return std::nullopt;
    } else {
      quantized = pairs[at];
    }
  }
  if (!quantized) return std::nullopt;
  for (const VllmPreset& preset : vllm_presets()) {
    if (preset.key_spec != types[static_cast<std::size_t>(quantized->k)] ||
        preset.value_spec != types[static_cast<std::size_t>(quantized->v)]) {
      continue;
    }
    const std::vector<int> forced = vllm_forced_layers(preset, profile.layers);
    const bool keeps_only_kept = std::all_of(forced.begin(), forced.end(), [&](int layer) {
      return std::find(kept.begin(), kept.end(), layer) != kept.end();
    });
    if (keeps_only_kept) return vllm_preset_plan(preset, kept, forced);
  }
  return std::nullopt;
}

// A layer map (vLLM's with keys and values alike, a layer at fp16 left out; Model-Optimizer's pairs), unscored;
// nullopt when a layer's pair has no quant_algo in that engine's map.
std::optional<EnginePlan> map_plan_of(const Profile& profile, const std::string& engine,
                                      const std::vector<std::string>& types, const std::vector<LayerPair>& pairs) {
  EnginePlan plan;
  plan.layer_map_plan = true;
  for (std::size_t at = 0; at < pairs.size(); ++at) {
    const std::string& key = types[static_cast<std::size_t>(pairs[at].k)];
    const std::string& value = types[static_cast<std::size_t>(pairs[at].v)];
    std::string algo = modelopt_quant_algo(key, value);
    const bool left_out = engine == kVllmEngine && key == "fp16" && value == "fp16";
    if (!left_out && (algo.empty() || (engine == kVllmEngine && key != value))) return std::nullopt;
    plan.layer_map.push_back({profile.layers[at], std::move(algo)});
  }
  return plan;
}

// The plan of `pairs` in `engine`'s shape, unscored; nullopt when the shape cannot hold it.
std::optional<EnginePlan> unscored_plan_of(const Profile& profile, const std::string& engine,
                                           const std::vector<std::string>& types, const std::vector<LayerPair>& pairs) {
  std::vector<int> keys, values;
  for (const LayerPair& pair : pairs) {
    keys.push_back(pair.k);
    values.push_back(pair.v);
  }
  if (engine == kVllmEngine) {
    std::optional<EnginePlan> preset = vllm_plan_of(profile, pairs, types);
    return preset ? preset : map_plan_of(profile, engine, types, pairs);
  }
  if (engine == kModeloptEngine) return map_plan_of(profile, engine, types, pairs);
  EnginePlan plan;
  if (engine == kTrtllmEngine) {
    if (keys != values) return std::nullopt;
    for (const int type : keys) plan.layer_types.emplace_back(trtllm_dtype(types[static_cast<std::size_t>(type)]));
    plan.layer_ranges = trtllm_layer_ranges(profile.layers, plan.layer_types);
    return plan;
  }
  const std::optional<RoleTypes> k = as_layer_ranges(keys, types), v = as_layer_ranges(values, types);
  if (!k || !v) return std::nullopt;
  plan.k = *k;
  plan.v = *v;
  const bool one_type = k->first_layers == 0 && k->last_layers == 0 && v->first_layers == 0 && v->last_layers == 0;
  if (is_llamacpp_engine(engine) && !one_type) return std::nullopt;
  return plan;
}

}  // namespace

std::optional<EnginePlan> engine_plan_of(const Profile& profile, const Objective& objective, const std::string& engine,
                                         const std::vector<std::string>& engine_types, const std::vector<int>& choice) {
  if (engine_types.size() != profile.candidates.size() || choice.size() != profile.units.size()) {
    throw InternalError("engine_plan_of: a type name per candidate and a candidate per unit expected");
  }
  const std::optional<std::vector<LayerPair>> pairs = layer_pairs(profile, choice);
  if (!pairs) return std::nullopt;
  std::optional<EnginePlan> plan = unscored_plan_of(profile, engine, engine_types, *pairs);
  if (plan) plan->scored = score_choice(profile, objective, engine_plan_name(engine, *plan), choice);
  return plan;
}

}  // namespace tqlab
