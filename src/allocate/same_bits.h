// allocate --engine's comparison at the same bits: the engine-shaped optimum beside what a user
// would otherwise run at the budget — the unconstrained optima per head and per layer, the uniform
// spec nearest below the budget, the boundary rule, vLLM's boundary rule and ik_llama.cpp's ends
// rule (allocate/folklore_rules.h) — each predicted by its profile and, with --verify, measured.
//
// A model profile is not additive over heads, so the optimum at the granularity the allocation was
// not solved at is solved on a profile measured at that granularity (the `other` profile: cached
// like any other); every other row is predicted by the allocation's profile.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "allocate/allocation.h"
#include "allocate/engine_shapes.h"

namespace tqlab {

struct SameBitsRow {
  std::string label;      ///< as a user knows it: "per-head optimum (the allocation)", "llama.cpp -ctk q5_1 -ctv q5_1"
  std::string kind;       ///< "engine", "predicted" (allocate/measured_pick.h), "optimum", "uniform", "rule"
  bool on_other = false;  ///< predicted by (and a choice over the units of) the other profile
  bool fits = true;       ///< false: a rule whose cheapest plan is over the budget (not measured)
  ScoredChoice scored;    ///< its name is the verify run's name
};

struct SameBits {
  Profile other;                  ///< the profile at the other granularity
  std::vector<SameBitsRow> rows;  ///< engine, optima, uniform, rules; those that exist
  /// The engine's best plan predicted by `other` (an engine's plan gives every head of a layer its
  /// role's type, so it is a choice over either profile's units): what the other optimum is held to.
  std::optional<ScoredChoice> engine_on_other;
};

/// The granularity the allocation was not solved at.
Granularity other_granularity(Granularity granularity);

/// The rows at `result`'s budget: `engine`'s best plan (when one fits), the allocation, the optimum
/// over `other` (a profile of the same candidates at the other granularity), the uniform spec nearest
/// below the budget, the boundary rule, vLLM's boundary rule and the ends rule, the rules' types
/// named by `engine_types`.
SameBits same_bits_rows(const Profile& profile, Profile other, const AllocationResult& result,
                        const EngineAllocation& engine, const std::vector<std::string>& engine_types);

/// The row whose choice is named `name`; null when none is.
const SameBitsRow* same_bits_row(const SameBits& same, const std::string& name);

/// How much less damage `optimum` has than `engine`: 1 - optimum / engine (nullopt when engine is 0).
std::optional<double> damage_saved(double optimum, double engine);

/// damage_saved of optimum row `row` against the engine's best plan, both predicted by the profile
/// that predicts `row`; nullopt without an engine plan.
std::optional<double> optimum_damage_saved(const SameBits& same, const SameBitsRow& row);

/// `choice` over `from`'s units as a choice over `to`'s (the same layers and candidates, another
/// granularity): each unit of `to` takes the candidate of `from`'s units of its layer and role;
/// nullopt when those differ between heads.
std::optional<std::vector<int>> choice_on(const Profile& from, const std::vector<int>& choice, const Profile& to);

}  // namespace tqlab
