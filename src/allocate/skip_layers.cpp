#include "allocate/skip_layers.h"

#include <algorithm>

#include "allocate/knapsack.h"

namespace tqlab {
namespace {

// The candidate a unit gets when its layer is quantized or kept.
int unit_candidate(const UnitProfile& unit, SkipLayersFormats formats, bool kept) {
  if (kept) return formats.unquantized;
  return unit.unit.role == Role::key ? formats.key : formats.value;
}

}  // namespace

std::optional<SkipLayersPlan> best_skip_layers(const Profile& profile, const Objective& objective,
                                               std::uint64_t capacity, SkipLayersFormats formats,
                                               const std::vector<int>& forced) {
  const auto is_forced = [&](int layer) { return std::find(forced.begin(), forced.end(), layer) != forced.end(); };
  // One group per layer: option 0 quantized, option 1 kept; a forced layer has only "kept".
  std::vector<KnapsackGroup> groups;
  for (const int layer : profile.layers) {
    KnapsackGroup group(is_forced(layer) ? 1 : 2);
    for (std::size_t u = 0; u < profile.units.size(); ++u) {
      const UnitProfile& unit = profile.units[u];
      if (unit.unit.layer != layer) continue;
      for (std::size_t option = 0; option < group.size(); ++option) {
        const bool kept = is_forced(layer) || option == 1;
        const auto candidate = static_cast<std::size_t>(unit_candidate(unit, formats, kept));
        group[option].cost += unit.candidates[candidate].bytes;
        group[option].damage += unit_damage(profile, objective, u, candidate);
      }
    }
    groups.push_back(std::move(group));
  }
  const std::optional<KnapsackSolution> solution = solve_knapsack(groups, capacity);
  if (!solution) return std::nullopt;
  SkipLayersPlan plan;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    const int layer = profile.layers[i];
    if (is_forced(layer) || solution->choice[i] == 1) plan.kept.push_back(layer);
  }
  for (const UnitProfile& unit : profile.units) {
    const bool kept = std::find(plan.kept.begin(), plan.kept.end(), unit.unit.layer) != plan.kept.end();
    plan.choice.push_back(unit_candidate(unit, formats, kept));
  }
  return plan;
}

}  // namespace tqlab
