#include "allocate/measured_pick.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace tqlab {
namespace {

// The index of the plan of engine.plans whose choice is `plan`'s, appending `plan` when none is.
std::size_t plan_index(EngineAllocation& engine, EnginePlan plan) {
  for (std::size_t i = 0; i < engine.plans.size(); ++i) {
    if (engine.plans[i].scored.choice == plan.scored.choice) return i;
  }
  engine.plans.push_back(std::move(plan));
  return engine.plans.size() - 1;
}

// `same`'s engine row shows `chosen` (a choice over `profile`'s units), and a row of kind "predicted"
// after it the profile's pick `set_aside`.
void repoint_engine_row(SameBits& same, const Profile& profile, const Objective& objective, const ScoredChoice& chosen,
                        const ScoredChoice& set_aside) {
  const auto row =
      std::find_if(same.rows.begin(), same.rows.end(), [](const SameBitsRow& entry) { return entry.kind == "engine"; });
  if (row == same.rows.end()) return;
  row->label = chosen.name;
  row->scored = chosen;
  same.engine_on_other.reset();
  if (const std::optional<std::vector<int>> mapped = choice_on(profile, chosen.choice, same.other)) {
    same.engine_on_other = score_choice(same.other, objective, chosen.name, *mapped);
  }
  same.rows.insert(row + 1, SameBitsRow{set_aside.name + " (the profile's pick)", "predicted", false, true, set_aside});
}

}  // namespace

void add_contenders(EngineAllocation& engine, const SameBits& same, const Profile& profile, const Objective& objective,
                    const std::vector<std::string>& engine_types) {
  engine.contenders.clear();
  if (!engine.best) return;
  engine.contenders.push_back(*engine.best);
  for (const SameBitsRow& row : same.rows) {
    if (row.kind == "engine" || row.on_other || !row.fits) continue;
    std::optional<EnginePlan> plan = engine_plan_of(profile, objective, engine.engine, engine_types, row.scored.choice);
    if (!plan) continue;
    const std::size_t index = plan_index(engine, std::move(*plan));
    if (std::find(engine.contenders.begin(), engine.contenders.end(), index) == engine.contenders.end()) {
      engine.contenders.push_back(index);
    }
  }
}

std::string contender_run_name(const EngineAllocation& engine, std::size_t index) {
  const EnginePlan& plan = engine.plans[index];
  if (!engine.runs_itself) return plan.scored.name;
  return fmt::format("{} ({})", engine_run_name(engine), engine_invocation(engine.engine, plan));
}

std::vector<EngineRunChoice> contender_engine_runs(const EngineAllocation& engine) {
  std::vector<EngineRunChoice> runs;
  if (!engine.runs_itself) return runs;
  for (const std::size_t index : engine.contenders) {
    const EnginePlan& plan = engine.plans[index];
    runs.push_back({contender_run_name(engine, index), engine.engine, plan.k.base, plan.v.base});
  }
  return runs;
}

void name_engine_run(const EngineAllocation& engine, Verification& verification) {
  if (!engine.runs_itself || !engine.best) return;
  const std::string measured = contender_run_name(engine, *engine.best);
  for (VerifiedRun& run : verification.runs) {
    if (std::find(run.names.begin(), run.names.end(), measured) != run.names.end()) {
      run.names.push_back(engine_run_name(engine));
    }
  }
}

void pick_measured_best(EngineAllocation& engine, SameBits& same, const Profile& profile, const Objective& objective,
                        const Verification& verification, const std::string& metric) {
  if (!engine.best || engine.contenders.empty()) return;
  std::size_t chosen = *engine.best;
  std::optional<double> least = measured_mean(verification, contender_run_name(engine, chosen), metric);
  for (const std::size_t index : engine.contenders) {
    const std::optional<double> value = measured_mean(verification, contender_run_name(engine, index), metric);
    if (!value || !least) return;
    if (*value < *least) {
      least = value;
      chosen = index;
    }
  }
  if (chosen == *engine.best) return;
  engine.profile_best = engine.best;
  engine.best = chosen;
  engine.invocation = engine_invocation(engine.engine, engine.plans[chosen]);
  repoint_engine_row(same, profile, objective, engine.plans[chosen].scored, engine.plans[*engine.profile_best].scored);
}

}  // namespace tqlab
