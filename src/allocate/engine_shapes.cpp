#include "allocate/engine_shapes.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace tqlab {
namespace {

bool is_llamacpp(const std::string& engine) { return engine.rfind("llama.cpp", 0) == 0; }

// The choice that gives every key unit candidate `k` and every value unit candidate `v`.
std::vector<int> one_type_per_role(const Profile& profile, int k, int v) {
  std::vector<int> choice;
  choice.reserve(profile.units.size());
  for (const UnitProfile& unit : profile.units) choice.push_back(unit.unit.role == Role::key ? k : v);
  return choice;
}

// llama.cpp's command-line flags for a plan (common/arg.cpp: -ctk, -ctv, -fa), and the
// environment variable that turns its cache rotation off.
std::string llamacpp_invocation(const std::string& engine, const std::string& k_type, const std::string& v_type) {
  const bool rotation_off = engine.find("rot=off") != std::string::npos;
  return fmt::format("{}-ctk {} -ctv {} -fa on", rotation_off ? "LLAMA_ATTN_ROT_DISABLE=1 " : "", k_type, v_type);
}

}  // namespace

std::string engine_run_name(const EngineAllocation& allocation) { return allocation.engine + " itself"; }

std::vector<std::string> default_engine_types(const std::string& engine) {
  if (is_llamacpp(engine)) return {"f16", "q8_0", "q5_1", "q5_0", "iq4_nl", "q4_1", "q4_0"};
  fail("allocate --engine {}: no allocation shape for this engine (engines with one: llama.cpp)", engine);
}

EngineAllocation allocate_for_engine(const Profile& profile, const Objective& objective, const Budget& budget,
                                     const std::string& engine, const std::vector<std::string>& engine_types) {
  if (!is_llamacpp(engine)) {
    fail("allocate --engine {}: no allocation shape for this engine (engines with one: llama.cpp)", engine);
  }
  if (engine_types.size() != profile.candidates.size()) {
    throw InternalError("allocate_for_engine: a type name per candidate expected");
  }
  EngineAllocation out;
  out.engine = engine;
  out.shape = "one cache type for the keys and one for the values, every layer alike";
  const int count = static_cast<int>(profile.candidates.size());
  for (int k = 0; k < count; ++k) {
    for (int v = 0; v < count; ++v) {
      EnginePlan plan;
      plan.k_type = engine_types[static_cast<std::size_t>(k)];
      plan.v_type = engine_types[static_cast<std::size_t>(v)];
      plan.scored =
          score_choice(profile, objective, fmt::format("{} -ctk {} -ctv {}", engine, plan.k_type, plan.v_type),
                       one_type_per_role(profile, k, v));
      out.plans.push_back(std::move(plan));
    }
  }
  std::stable_sort(out.plans.begin(), out.plans.end(),
                   [](const EnginePlan& a, const EnginePlan& b) { return a.scored.bytes < b.scored.bytes; });
  for (std::size_t i = 0; i < out.plans.size(); ++i) {
    const ScoredChoice& scored = out.plans[i].scored;
    if (scored.bytes > budget.capacity) continue;
    // The least damage; on a tie the fewer bytes (plans are by ascending bytes: the first found).
    if (!out.best || scored.damage < out.plans[*out.best].scored.damage) out.best = i;
  }
  if (out.best) {
    const EnginePlan& best = out.plans[*out.best];
    out.invocation = llamacpp_invocation(engine, best.k_type, best.v_type);
  }
  return out;
}

}  // namespace tqlab
