#include "allocate/same_bits.h"

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
  if (engine.best)
    out.rows.push_back(row(engine.plans[*engine.best].scored.name, "engine", engine.plans[*engine.best].scored));
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

std::optional<double> damage_saved(double optimum, double engine) {
  if (engine == 0) return std::nullopt;
  return 1 - optimum / engine;
}

}  // namespace tqlab
