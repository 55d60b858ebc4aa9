#include "allocate/engine_shapes.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "allocate/engine_names.h"
#include "allocate/layer_ranges.h"
#include "allocate/layer_types.h"
#include "allocate/skip_layers.h"
#include "core/error.h"
#include "engine/engine.h"
#include "quant/vllm_presets.h"

namespace tqlab {
namespace {

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
                     role_flags("ctv", plan.v), is_llamacpp_engine(engine) ? " -fa on" : "");
}

namespace {

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
      plan.scored =
          score_choice(profile, objective, engine_plan_name(out.engine, plan), one_type_per_role(profile, k, v));
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
  plan.scored = score_choice(profile, objective, engine_plan_name(out.engine, plan), ranges->choice);
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
  return solved_layer_map(profile, objective, kVllmEngine, types, *solved);
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
  for (const VllmPreset& preset : vllm_presets()) {
    const int key = index_of(preset.key_spec), value = index_of(preset.value_spec);
    if (key < 0 || value < 0) continue;
    const std::vector<int> forced = vllm_forced_layers(preset, profile.layers);
    const std::optional<SkipLayersPlan> kept =
        best_skip_layers(profile, objective, budget.capacity, {key, value, unquantized}, forced);
    if (!kept) continue;
    EnginePlan plan = vllm_preset_plan(preset, kept->kept, forced);
    plan.scored = score_choice(profile, objective, engine_plan_name(out.engine, plan), kept->choice);
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
  out.plans.push_back(solved_layer_map(profile, objective, kModeloptEngine, types, *solved));
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
  plan.scored = score_choice(profile, objective, engine_plan_name(out.engine, plan), layers->choice);
  out.plans.push_back(std::move(plan));
  out.best = 0;
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

std::vector<std::string> engine_type_names(const std::string& engine, const std::vector<std::string>& types) {
  if (engine != kTrtllmEngine) return types;
  std::vector<std::string> names;
  for (const std::string& type : types) names.emplace_back(trtllm_dtype(type));
  return names;
}

void check_engine_types(const std::string& engine, const std::vector<std::string>& types, const std::string& option) {
  if (engine == kModeloptEngine) {
    for (const std::string& type : types) {
      if (type != "fp8_e4m3" && type != "nvfp4") {
        fail("allocate: {} '{}' with --engine {}: its layer-wise KV formats are fp8_e4m3 and nvfp4 (FP8, NVFP4)",
             option, type, engine);
      }
    }
    return;
  }
  if (engine != kTrtllmEngine) return;
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
  if (text == kIkLlamaCppEngine || text == kVllmEngine || text == kTrtllmEngine || text == kModeloptEngine) return text;
  const std::string engine = is_llamacpp_engine(text) ? canonical_engine(text, option) : text;
  if (!is_llamacpp_engine(engine)) {
    fail("{} '{}': allocate solves over what llama.cpp, llama.cpp:rot=off, {}, {}, {} and {} can run", option, text,
         kIkLlamaCppEngine, kVllmEngine, kTrtllmEngine, kModeloptEngine);
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
  if (engine == kIkLlamaCppEngine) return "llama.cpp";
  return engine == kVllmEngine || engine == kTrtllmEngine || engine == kModeloptEngine ? "tqlab" : engine;
}

std::string engine_run_name(const EngineAllocation& allocation) { return allocation.engine + " itself"; }

std::vector<std::string> default_engine_types(const std::string& engine) {
  if (is_llamacpp_engine(engine) || engine == kIkLlamaCppEngine)
    return {"f16", "q8_0", "q5_1", "q5_0", "iq4_nl", "q4_1", "q4_0"};
  if (engine == kVllmEngine) {
    std::vector<std::string> types;
    for (const VllmPreset& preset : vllm_presets()) {
      for (const std::string_view spec : {preset.key_spec, preset.value_spec}) {
        if (std::find(types.begin(), types.end(), spec) == types.end()) types.emplace_back(spec);
      }
    }
    for (const char* spec : {"fp16", "fp8_e4m3", "nvfp4"}) types.emplace_back(spec);  // fp16: kept layers
    return types;
  }
  if (engine == kTrtllmEngine) return {"fp16", "fp8_e4m3", "nvfp4"};
  if (engine == kModeloptEngine) return {"fp8_e4m3", "nvfp4"};
  fail("allocate --engine {}: no allocation shape for this engine (engines with one: llama.cpp, {}, {}, {}, {})",
       engine, kIkLlamaCppEngine, kVllmEngine, kTrtllmEngine, kModeloptEngine);
}

EngineAllocation allocate_for_engine(const Profile& profile, const Objective& objective, const Budget& budget,
                                     const std::string& engine, const std::vector<std::string>& engine_types) {
  if (engine_types.size() != profile.candidates.size()) {
    throw InternalError("allocate_for_engine: a type name per candidate expected");
  }
  EngineAllocation out;
  out.engine = engine;
  if (is_llamacpp_engine(engine)) {
    solve_one_type_per_role(out, profile, objective, budget, engine_types);
  } else if (engine == kIkLlamaCppEngine) {
    solve_layer_ranges(out, profile, objective, budget, engine_types);
  } else if (engine == kVllmEngine) {
    solve_vllm_presets(out, profile, objective, budget, engine_types);
  } else if (engine == kTrtllmEngine) {
    check_engine_types(engine, engine_types, "--candidates");
    solve_layer_types(out, profile, objective, budget, engine_types);
  } else if (engine == kModeloptEngine) {
    check_engine_types(engine, engine_types, "--candidates");
    solve_modelopt_pairs(out, profile, objective, budget, engine_types);
  } else {
    fail("allocate --engine {}: no allocation shape for this engine (engines with one: llama.cpp, {}, {}, {}, {})",
         engine, kIkLlamaCppEngine, kVllmEngine, kTrtllmEngine, kModeloptEngine);
  }
  if (out.best) out.invocation = engine_invocation(engine, out.plans[*out.best]);
  return out;
}

}  // namespace tqlab
