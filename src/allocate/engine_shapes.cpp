#include "allocate/engine_shapes.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "allocate/layer_ranges.h"
#include "allocate/layer_types.h"
#include "allocate/skip_layers.h"
#include "core/error.h"
#include "engine/engine.h"
#include "quant/vllm_presets.h"

namespace tqlab {
namespace {

constexpr const char* kIkLlamaCpp = "ik_llama.cpp";
constexpr const char* kVllm = "vllm";
constexpr const char* kTrtllm = "trtllm";
constexpr const char* kModelopt = "modelopt";

// TensorRT-LLM's dtype strings for tqlab's specs of its KV cache types: "fp8" and "nvfp4" as
// KvCacheConfig.dtype takes them, the 16-bit types as tensorrt_llm/_utils.py's dtype table spells them.
constexpr std::pair<std::string_view, std::string_view> kTrtllmDtypes[] = {
    {"fp16", "float16"}, {"bf16", "bfloat16"}, {"fp8_e4m3", "fp8"}, {"nvfp4", "nvfp4"}};

std::string_view trtllm_dtype(std::string_view spec) {
  for (const auto& [ours, theirs] : kTrtllmDtypes) {
    if (ours == spec) return theirs;
  }
  return {};
}

bool is_llamacpp(const std::string& engine) { return engine.rfind("llama.cpp", 0) == 0; }

// The choice that gives every key unit candidate `k` and every value unit candidate `v`.
std::vector<int> one_type_per_role(const Profile& profile, int k, int v) {
  std::vector<int> choice;
  choice.reserve(profile.units.size());
  for (const UnitProfile& unit : profile.units) choice.push_back(unit.unit.role == Role::key ? k : v);
  return choice;
}

// One role's flags: "-ctk B" and, for ranges, ik_llama.cpp's "-ctk-first T,N -ctk-last T,M".
std::string role_flags(const char* flag, const RoleTypes& role) {
  std::string text = fmt::format("-{} {}", flag, role.base);
  if (role.first_layers > 0) text += fmt::format(" -{}-first {},{}", flag, role.first, role.first_layers);
  if (role.last_layers > 0) text += fmt::format(" -{}-last {},{}", flag, role.last, role.last_layers);
  return text;
}

}  // namespace

// The engine's command-line flags for a plan (llama.cpp common/arg.cpp: -ctk, -ctv, -fa; a
// quantized V cache needs flash attention), and the environment variable that turns llama.cpp's
// cache rotation off.
std::string engine_invocation(const std::string& engine, const EnginePlan& plan) {
  // TensorRT-LLM: the LLM API's KvCacheConfig(dtype=...), as trtllm-serve's --extra_llm_api_options YAML.
  if (!plan.layer_ranges.empty()) return fmt::format("kv_cache_config: {{dtype: \"{}\"}}", plan.layer_ranges);
  // A layer map: vLLM takes the checkpoint's recipe only with "auto" (an explicit dtype overrides every layer).
  if (plan.layer_map_plan) return "--kv-cache-dtype auto";
  if (!plan.preset.empty()) {
    std::string text = "--kv-cache-dtype " + plan.preset;
    if (!plan.skip_layers.empty())
      text += fmt::format(" --kv-cache-dtype-skip-layers {}", fmt::join(plan.skip_layers, " "));
    return text;
  }
  const bool rotation_off = engine.find("rot=off") != std::string::npos;
  // llama.cpp's -fa takes on|off|auto; ik_llama.cpp's spelling differs between versions: left to the user.
  return fmt::format("{}{} {}{}", rotation_off ? "LLAMA_ATTN_ROT_DISABLE=1 " : "", role_flags("ctk", plan.k),
                     role_flags("ctv", plan.v), is_llamacpp(engine) ? " -fa on" : "");
}

namespace {

// The name the engine's solver gives `plan` (solve_one_type_per_role, solve_layer_ranges, ...).
std::string plan_name(const std::string& engine, const EnginePlan& plan) {
  if (plan.layer_map_plan) {  // "vllm layer map 0-1:NVFP4,2:FP8,3:unquantized"
    std::vector<int> layers;
    std::vector<std::string> algos;
    for (const LayerAlgo& entry : plan.layer_map) {
      layers.push_back(entry.layer);
      algos.push_back(entry.quant_algo.empty() ? "unquantized" : entry.quant_algo);
    }
    return fmt::format("{} layer map {}", engine, trtllm_layer_ranges(layers, algos));
  }
  if (is_llamacpp(engine)) return fmt::format("{} -ctk {} -ctv {}", engine, plan.k.base, plan.v.base);
  if (engine == kTrtllm) return "trtllm " + plan.layer_ranges;
  return engine + " " + engine_invocation(engine, plan);
}

RoleTypes role_types(const LayerRanges& ranges, const std::vector<std::string>& names) {
  RoleTypes out;
  out.base = names[static_cast<std::size_t>(ranges.base)];
  out.first_layers = ranges.first_layers;
  out.last_layers = ranges.last_layers;
  if (ranges.first_layers > 0) out.first = names[static_cast<std::size_t>(ranges.first)];
  if (ranges.last_layers > 0) out.last = names[static_cast<std::size_t>(ranges.last)];
  return out;
}

// llama.cpp: every (K type, V type) plan, by ascending bytes; the best the least damage within
// the budget (on a tie the fewer bytes: the first found).
void solve_one_type_per_role(EngineAllocation& out, const Profile& profile, const Objective& objective,
                             const Budget& budget, const std::vector<std::string>& types) {
  out.shape = "one cache type for the keys and one for the values, every layer alike";
  out.runs_itself = true;
  const int count = static_cast<int>(types.size());
  for (int k = 0; k < count; ++k) {
    for (int v = 0; v < count; ++v) {
      EnginePlan plan;
      plan.k.base = types[static_cast<std::size_t>(k)];
      plan.v.base = types[static_cast<std::size_t>(v)];
      plan.scored = score_choice(profile, objective, plan_name(out.engine, plan), one_type_per_role(profile, k, v));
      out.plans.push_back(std::move(plan));
    }
  }
  std::stable_sort(out.plans.begin(), out.plans.end(),
                   [](const EnginePlan& a, const EnginePlan& b) { return a.scored.bytes < b.scored.bytes; });
  for (std::size_t i = 0; i < out.plans.size(); ++i) {
    const ScoredChoice& scored = out.plans[i].scored;
    if (scored.bytes > budget.capacity) continue;
    if (!out.best || scored.damage < out.plans[*out.best].scored.damage) out.best = i;
  }
}

// ik_llama.cpp: first-N / last-M layer ranges per role (allocate/layer_ranges.h).
void solve_layer_ranges(EngineAllocation& out, const Profile& profile, const Objective& objective, const Budget& budget,
                        const std::vector<std::string>& types) {
  out.shape = "per role a type for every layer, another for the first N and another for the last M layers";
  const std::optional<RangesPlan> ranges = best_layer_ranges(profile, objective, budget.capacity);
  if (!ranges) return;
  EnginePlan plan;
  plan.k = role_types(ranges->key, types);
  plan.v = role_types(ranges->value, types);
  plan.scored = score_choice(profile, objective, plan_name(out.engine, plan), ranges->choice);
  out.plans.push_back(std::move(plan));
  out.best = 0;
}

// The index of `spec` in `types`, -1 when absent.
int type_index(const std::vector<std::string>& types, std::string_view spec) {
  const auto found = std::find(types.begin(), types.end(), spec);
  return found == types.end() ? -1 : static_cast<int>(found - types.begin());
}

// The layer map `solved` chose, built and named as engine_plan_of builds and names any plan of the engine.
EnginePlan solved_layer_map(const Profile& profile, const Objective& objective, const std::string& engine,
                            const std::vector<std::string>& types, const LayerPairsPlan& solved) {
  std::optional<EnginePlan> plan = engine_plan_of(profile, objective, engine, types, solved.choice);
  if (!plan || !plan->layer_map_plan)
    throw InternalError(fmt::format("allocate --engine {}: a solved layer map is no layer map", engine));
  return std::move(*plan);
}

// vLLM's layer map (vLLM PR #56116): per layer FP8, NVFP4 (keys and values alike) or left out at the
// model's dtype, over those of fp8_e4m3, nvfp4 and fp16 that are candidates; none when neither format is.
std::optional<EnginePlan> solve_vllm_layer_map(const Profile& profile, const Objective& objective, const Budget& budget,
                                               const std::vector<std::string>& types) {
  std::vector<KvPair> pairs;
  for (const std::string_view spec : {"fp8_e4m3", "nvfp4", "fp16"}) {
    if (const int at = type_index(types, spec); at >= 0) pairs.push_back({at, at});
  }
  if (pairs.size() < 2) return std::nullopt;  // fp16 alone (solve_vllm_presets requires it): no map
  const std::optional<LayerPairsPlan> solved = best_layer_pairs(profile, objective, budget.capacity, pairs);
  if (!solved) return std::nullopt;
  return solved_layer_map(profile, objective, kVllm, types, *solved);
}

// vLLM: every preset whose formats are candidates, each with the best set of kept layers.
void solve_vllm_presets(EngineAllocation& out, const Profile& profile, const Objective& objective, const Budget& budget,
                        const std::vector<std::string>& types) {
  out.shape =
      "a preset on every layer but those kept at the model's precision (a TurboQuant preset's first and "
      "last 2, and --kv-cache-dtype-skip-layers), or with --kv-cache-dtype auto the checkpoint's layer map "
      "(FP8 or NVFP4 per layer, keys and values alike)";
  const auto index_of = [&](std::string_view spec) { return type_index(types, spec); };
  const int unquantized = index_of("fp16");
  if (unquantized < 0) {
    fail("allocate --engine vllm: the candidates need fp16, the precision of the layers vLLM keeps unquantized");
  }
  const int layers = static_cast<int>(profile.layers.size());
  for (const VllmPreset& preset : vllm_presets()) {
    const int key = index_of(preset.key_spec), value = index_of(preset.value_spec);
    if (key < 0 || value < 0) continue;
    std::vector<int> forced;
    for (int at = 0; at < layers; ++at) {
      if (!vllm_layer_quantized(preset, at, layers)) forced.push_back(profile.layers[static_cast<std::size_t>(at)]);
    }
    const std::optional<SkipLayersPlan> kept =
        best_skip_layers(profile, objective, budget.capacity, {key, value, unquantized}, forced);
    if (!kept) continue;
    EnginePlan plan;
    plan.preset = preset.name;
    plan.k.base = preset.key_spec;
    plan.v.base = preset.value_spec;
    plan.kept_layers = kept->kept;
    for (const int layer : kept->kept) {
      if (std::find(forced.begin(), forced.end(), layer) == forced.end()) plan.skip_layers.push_back(layer);
    }
    plan.scored = score_choice(profile, objective, plan_name(out.engine, plan), kept->choice);
    out.plans.push_back(std::move(plan));
  }
  if (std::optional<EnginePlan> map = solve_vllm_layer_map(profile, objective, budget, types)) {
    out.plans.push_back(std::move(*map));
  }
  for (std::size_t i = 0; i < out.plans.size(); ++i) {
    if (!out.best || out.plans[i].scored.damage < out.plans[*out.best].scored.damage) out.best = i;
  }
}

// Model-Optimizer's layer-wise KV AutoQuant (PR #2272): per layer FP8 K/V, FP8-K/NVFP4-V or NVFP4 K/V,
// those whose formats are candidates.
void solve_modelopt_pairs(EngineAllocation& out, const Profile& profile, const Objective& objective,
                          const Budget& budget, const std::vector<std::string>& types) {
  out.shape =
      "per layer one (K, V) pair among FP8 K/V, FP8-K/NVFP4-V and NVFP4 K/V (Model-Optimizer's layer-wise KV "
      "AutoQuant), in the checkpoint's hf_quant_config.json";
  const int fp8 = type_index(types, "fp8_e4m3"), nvfp4 = type_index(types, "nvfp4");
  std::vector<KvPair> pairs;
  if (fp8 >= 0) pairs.push_back({fp8, fp8});
  if (fp8 >= 0 && nvfp4 >= 0) pairs.push_back({fp8, nvfp4});
  if (nvfp4 >= 0) pairs.push_back({nvfp4, nvfp4});
  const std::optional<LayerPairsPlan> solved = best_layer_pairs(profile, objective, budget.capacity, pairs);
  if (!solved) return;
  out.plans.push_back(solved_layer_map(profile, objective, kModelopt, types, *solved));
  out.best = 0;
}

// TensorRT-LLM: a dtype per layer, keys and values alike (allocate/layer_types.h), over every candidate.
void solve_layer_types(EngineAllocation& out, const Profile& profile, const Objective& objective, const Budget& budget,
                       const std::vector<std::string>& types) {
  out.shape = "one dtype per layer, keys and values alike, as ranges over layers";
  std::vector<int> allowed(types.size());
  for (std::size_t i = 0; i < allowed.size(); ++i) allowed[i] = static_cast<int>(i);
  const std::optional<LayerTypesPlan> layers = best_layer_types(profile, objective, budget.capacity, allowed);
  if (!layers) return;
  EnginePlan plan;
  for (const int type : layers->types)
    plan.layer_types.emplace_back(trtllm_dtype(types[static_cast<std::size_t>(type)]));
  plan.layer_ranges = trtllm_layer_ranges(profile.layers, plan.layer_types);
  plan.scored = score_choice(profile, objective, plan_name(out.engine, plan), layers->choice);
  out.plans.push_back(std::move(plan));
  out.best = 0;
}

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
  const int layers = static_cast<int>(pairs.size());
  for (const VllmPreset& preset : vllm_presets()) {
    if (preset.key_spec != types[static_cast<std::size_t>(quantized->k)] ||
        preset.value_spec != types[static_cast<std::size_t>(quantized->v)]) {
      continue;
    }
    EnginePlan plan;
    bool keeps_only_kept = true;
    for (int at = 0; at < layers; ++at) {
      const int layer = profile.layers[static_cast<std::size_t>(at)];
      const bool forced = !vllm_layer_quantized(preset, at, layers);
      const bool is_kept = std::find(kept.begin(), kept.end(), layer) != kept.end();
      if (forced && !is_kept) keeps_only_kept = false;
      if (is_kept && !forced) plan.skip_layers.push_back(layer);
    }
    if (!keeps_only_kept) continue;
    plan.preset = preset.name;
    plan.k.base = preset.key_spec;
    plan.v.base = preset.value_spec;
    plan.kept_layers = kept;
    return plan;
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
    const bool left_out = engine == kVllm && key == "fp16" && value == "fp16";
    if (!left_out && (algo.empty() || (engine == kVllm && key != value))) return std::nullopt;
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
  if (engine == kVllm) {
    std::optional<EnginePlan> preset = vllm_plan_of(profile, pairs, types);
    return preset ? preset : map_plan_of(profile, engine, types, pairs);
  }
  if (engine == kModelopt) return map_plan_of(profile, engine, types, pairs);
  EnginePlan plan;
  if (engine == kTrtllm) {
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
  if (is_llamacpp(engine) && !one_type) return std::nullopt;
  return plan;
}

}  // namespace

std::string trtllm_layer_ranges(const std::vector<int>& layers, const std::vector<std::string>& dtypes) {
  if (layers.size() != dtypes.size()) throw InternalError("trtllm_layer_ranges: a dtype per layer expected");
  std::string text;
  for (std::size_t from = 0; from < layers.size();) {
    std::size_t to = from;  // the run [from, to] of one dtype over consecutive layer numbers
    while (to + 1 < layers.size() && dtypes[to + 1] == dtypes[from] && layers[to + 1] == layers[to] + 1) ++to;
    if (!text.empty()) text += ",";
    text += to == from ? fmt::format("{}:{}", layers[from], dtypes[from])
                       : fmt::format("{}-{}:{}", layers[from], layers[to], dtypes[from]);
    from = to + 1;
  }
  return text;
}

std::optional<EnginePlan> engine_plan_of(const Profile& profile, const Objective& objective, const std::string& engine,
                                         const std::vector<std::string>& engine_types, const std::vector<int>& choice) {
  if (engine_types.size() != profile.candidates.size() || choice.size() != profile.units.size()) {
    throw InternalError("engine_plan_of: a type name per candidate and a candidate per unit expected");
  }
  const std::optional<std::vector<LayerPair>> pairs = layer_pairs(profile, choice);
  if (!pairs) return std::nullopt;
  std::optional<EnginePlan> plan = unscored_plan_of(profile, engine, engine_types, *pairs);
  if (plan) plan->scored = score_choice(profile, objective, plan_name(engine, *plan), choice);
  return plan;
}

std::vector<std::string> engine_type_names(const std::string& engine, const std::vector<std::string>& types) {
  if (engine != kTrtllm) return types;
  std::vector<std::string> names;
  for (const std::string& type : types) names.emplace_back(trtllm_dtype(type));
  return names;
}

void check_engine_types(const std::string& engine, const std::vector<std::string>& types, const std::string& option) {
  if (engine == kModelopt) {
    for (const std::string& type : types) {
      if (type != "fp8_e4m3" && type != "nvfp4") {
        fail("allocate: {} '{}' with --engine {}: its layer-wise KV formats are fp8_e4m3 and nvfp4 (FP8, NVFP4)",
             option, type, engine);
      }
    }
    return;
  }
  if (engine != kTrtllm) return;
  for (const std::string& type : types) {
    if (trtllm_dtype(type).empty()) {
      fail(
          "allocate: {} '{}' with --engine {}: its KV cache dtypes are fp16, bf16, fp8_e4m3 and nvfp4 (TensorRT-LLM's "
          "float16, bfloat16, fp8, nvfp4)",
          option, type, engine);
    }
  }
}

std::string canonical_allocation_engine(const std::string& text, const std::string& option) {
  if (text == kIkLlamaCpp || text == kVllm || text == kTrtllm || text == kModelopt) return text;
  const std::string engine = is_llamacpp(text) ? canonical_engine(text, option) : text;
  if (!is_llamacpp(engine)) {
    fail("{} '{}': allocate solves over what llama.cpp, llama.cpp:rot=off, {}, {}, {} and {} can run", option, text,
         kIkLlamaCpp, kVllm, kTrtllm, kModelopt);
  }
  return engine;
}

std::string engine_loader_file(const EngineAllocation& engine) {
  if (!engine.best) return "";
  const std::vector<LayerAlgo>& map = engine.plans[*engine.best].layer_map;
  const bool quantized =
      std::any_of(map.begin(), map.end(), [](const LayerAlgo& entry) { return !entry.quant_algo.empty(); });
  return quantized ? kModeloptConfigFile : "";
}

std::string engine_of_types(const std::string& engine) {
  if (engine == kIkLlamaCpp) return "llama.cpp";
  return engine == kVllm || engine == kTrtllm || engine == kModelopt ? "tqlab" : engine;
}

std::string engine_run_name(const EngineAllocation& allocation) { return allocation.engine + " itself"; }

std::vector<std::string> default_engine_types(const std::string& engine) {
  if (is_llamacpp(engine) || engine == kIkLlamaCpp) return {"f16", "q8_0", "q5_1", "q5_0", "iq4_nl", "q4_1", "q4_0"};
  if (engine == kVllm) {
    std::vector<std::string> types;
    for (const VllmPreset& preset : vllm_presets()) {
      for (const std::string_view spec : {preset.key_spec, preset.value_spec}) {
        if (std::find(types.begin(), types.end(), spec) == types.end()) types.emplace_back(spec);
      }
    }
    for (const char* spec : {"fp16", "fp8_e4m3", "nvfp4"}) types.emplace_back(spec);  // fp16: kept layers
    return types;
  }
  if (engine == kTrtllm) return {"fp16", "fp8_e4m3", "nvfp4"};
  if (engine == kModelopt) return {"fp8_e4m3", "nvfp4"};
  fail("allocate --engine {}: no allocation shape for this engine (engines with one: llama.cpp, {}, {}, {}, {})",
       engine, kIkLlamaCpp, kVllm, kTrtllm, kModelopt);
}

EngineAllocation allocate_for_engine(const Profile& profile, const Objective& objective, const Budget& budget,
                                     const std::string& engine, const std::vector<std::string>& engine_types) {
  if (engine_types.size() != profile.candidates.size()) {
    throw InternalError("allocate_for_engine: a type name per candidate expected");
  }
  EngineAllocation out;
  out.engine = engine;
  if (is_llamacpp(engine)) {
    solve_one_type_per_role(out, profile, objective, budget, engine_types);
  } else if (engine == kIkLlamaCpp) {
    solve_layer_ranges(out, profile, objective, budget, engine_types);
  } else if (engine == kVllm) {
    solve_vllm_presets(out, profile, objective, budget, engine_types);
  } else if (engine == kTrtllm) {
    check_engine_types(engine, engine_types, "--candidates");
    solve_layer_types(out, profile, objective, budget, engine_types);
  } else if (engine == kModelopt) {
    check_engine_types(engine, engine_types, "--candidates");
    solve_modelopt_pairs(out, profile, objective, budget, engine_types);
  } else {
    fail("allocate --engine {}: no allocation shape for this engine (engines with one: llama.cpp, {}, {}, {}, {})",
         engine, kIkLlamaCpp, kVllm, kTrtllm, kModelopt);
  }
  if (out.best) out.invocation = engine_invocation(engine, out.plans[*out.best]);
  return out;
}

}  // namespace tqlab
