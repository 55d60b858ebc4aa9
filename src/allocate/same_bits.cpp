#include "allocate/same_bits.h"

#include <algorithm>
#include <map>
#include <utility>

#include "allocate/folklore_rules.h"

namespace tqlab {
namespace {

const char* granularity_label(Granularity granularity) {
  return granularity == Granularity::layer ? "per-layer optimum" : "per-head optimum";
}

SameBitsRow row(std::string label, std::string kind, ScoredChoice scored, bool on_other = false, bool fits = true) {
  return SameBitsRow{std::move(label), std::move(kind), on_other, fits, std::move(scored)};
}

// A rule's row: scored on the allocation's profile, named as the rule names itself.
void add_rule(SameBits& out, const Profile& profile, const Objective& objective, const std::optional<RulePlan>& rule) {
  if (!rule) return;
  out.rows.push_back(
      row(rule->name, "rule", score_choice(profile, objective, rule->name, rule->choice), false, rule->fits));
}

}  // namespace

Granularity other_granularity(Granularity granularity) {
  return granularity == Granularity::layer ? Granularity::layer_head : Granularity::layer;
}

SameBits same_bits_rows(const Profile& profile, Profile other, const AllocationResult& result,
                        const EngineAllocation& engine, const std::vector<std::string>& engine_types) {
  SameBits out;
  out.other = std::move(other);
  if (engine.best) {
    const ScoredChoice& best = engine.plans[*engine.best].scored;
    out.rows.push_back(row(best.name, "engine", best));
    if (const std::optional<std::vector<int>> mapped = choice_on(profile, best.choice, out.other)) {
      out.engine_on_other = score_choice(out.other, result.objective, best.name, *mapped);
    }
  }
  out.rows.push_back(
      row(std::string(granularity_label(profile.granularity)) + " (the allocation)", "optimum", result.allocation));
  ScoredChoice other_optimum =
      allocate_bits(out.other, result.objective, resolve_budget(out.other, result.budget.given, "--budget")).allocation;
  other_optimum.name = granularity_label(out.other.granularity);
  std::string label = other_optimum.name;
  out.rows.push_back(row(std::move(label), "optimum", std::move(other_optimum), true));
  if (!result.uniform.empty()) out.rows.push_back(row(result.uniform.back().name, "uniform", result.uniform.back()));
  if (result.boundary) {
    out.rows.push_back(row("boundary (first and last layers a rung up)", "rule", *result.boundary));
  }
  add_rule(out, profile, result.objective, vllm_boundary_rule(profile, result.budget.capacity, engine_types));
  add_rule(out, profile, result.objective, ends_rule(profile, result.budget.capacity, engine_types));
  return out;
}

const SameBitsRow* same_bits_row(const SameBits& same, const std::string& name) {
  for (const SameBitsRow& entry : same.rows) {
    if (entry.scored.name == name) return &entry;
  }
  return nullptr;
}

std::optional<double> optimum_damage_saved(const SameBits& same, const SameBitsRow& row) {
  const auto engine =
      std::find_if(same.rows.begin(), same.rows.end(), [](const SameBitsRow& entry) { return entry.kind == "engine"; });
  if (engine == same.rows.end()) return std::nullopt;
  if (!row.on_other) return damage_saved(row.scored.damage, engine->scored.damage);
  return same.engine_on_other ? damage_saved(row.scored.damage, same.engine_on_other->damage) : std::nullopt;
}

std::optional<std::vector<int>> choice_on(const Profile& from, const std::vector<int>& choice, const Profile& to) {
  std::map<std::pair<int, Role>, int> by_layer_role;
  for (std::size_t u = 0; u < from.units.size(); ++u) {
    const auto [at, fresh] =
        by_layer_role.emplace(std::pair{from.units[u].unit.layer, from.units[u].unit.role}, choice[u]);
    if (!fresh && at->second != choice[u]) return std::nullopt;
  }
  std::vector<int> out;
  for (const UnitProfile& unit : to.units) out.push_back(by_layer_role.at({unit.unit.layer, unit.unit.role}));
  return out;
}

std::optional<double> damage_saved(double optimum, double engine) {
  if (engine == 0) return std::nullopt;
  return 1 - optimum / engine;
}

}  // namespace tqlab
