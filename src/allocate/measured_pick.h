// allocate --engine --verify: the plan the engine is told to run, chosen by measurement.
//
// The engine's best plan is the least *predicted* damage on the additive profile, but a plan's damage
// is not exactly the sum of its units' (docs/FINDINGS.md: on the bundled model TensorRT-LLM's
// profile-best plan at 6 bits measured 0.00795 e2e_kld against 0.00705 for the boundary rule at the
// same 5.38 bits, where the profile predicted 0.00708 against 0.00731). So --verify measures, besides
// the profile's best, every row at the same bits within the budget that the engine can run (the
// uniform spec, the rules, an optimum that happens to fit the engine's shape: engine_plan_of), and
// the engine is told to run the least measured. Measured in the engine's own numerics where tqlab has
// them (llama.cpp: each contender run under the engine itself, one seed), else in tqlab's semantics,
// in which every row is compared.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "allocate/engine_shapes.h"
#include "allocate/same_bits.h"
#include "allocate/verify.h"

namespace tqlab {

/// Sets engine.contenders: engine.best and every row of `same` (over `profile`'s units, within the
/// budget, not the engine's own row) that `engine` can run, as its plans: each found among
/// engine.plans by its choice, or appended there. `engine_types` as allocate_for_engine takes them.
/// Nothing without a best plan.
void add_contenders(EngineAllocation& engine, const SameBits& same, const Profile& profile, const Objective& objective,
                    const std::vector<std::string>& engine_types);

/// The verify run that measures plan `index` of `engine` for the pick: for an engine tqlab runs itself
/// its run under the engine ("llama.cpp itself (-ctk q5_1 -ctv q5_1 -fa on)"), else the plan's own run
/// in tqlab's semantics (its name).
std::string contender_run_name(const EngineAllocation& engine, std::size_t index);

/// The runs under the engine itself that measure engine.contenders (none unless tqlab runs the engine).
std::vector<EngineRunChoice> contender_engine_runs(const EngineAllocation& engine);

/// Gives the run under the engine that measured engine.best the name engine_run_name (what
/// "measured_as" says: "llama.cpp itself"). Nothing unless tqlab runs the engine.
void name_engine_run(const EngineAllocation& engine, Verification& verification);

/// Moves engine.best to the contender of least measured `metric` (contender_run_name's run, mean over
/// seeds; ties keep the
/// profile's best; the plans are choices over `profile`'s units). When it moves: engine.profile_best keeps the
/// profile's best, the invocation is the new best's, `same`'s engine row (and engine_on_other) is the new best, and a
/// row of kind "predicted" after it is the profile's best. Unchanged when a contender has no measurement.
void pick_measured_best(EngineAllocation& engine, SameBits& same, const Profile& profile, const Objective& objective,
                        const Verification& verification, const std::string& metric);

}  // namespace tqlab
