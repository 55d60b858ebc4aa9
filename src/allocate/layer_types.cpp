#include "allocate/layer_types.h"

#include <map>

#include "allocate/knapsack.h"

namespace tqlab {

std::optional<LayerTypesPlan> best_layer_types(const Profile& profile, const Objective& objective,
                                               std::uint64_t capacity, const std::vector<int>& allowed) {
  std::map<int, std::size_t> position;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) position[profile.layers[i]] = i;
  // One group per layer, one option per allowed type: the layer's units' bytes and damages summed.
  std::vector<KnapsackGroup> groups(profile.layers.size(), KnapsackGroup(allowed.size()));
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    KnapsackGroup& group = groups[position.at(profile.units[u].unit.layer)];
    for (std::size_t option = 0; option < allowed.size(); ++option) {
      const auto candidate = static_cast<std::size_t>(allowed[option]);
      group[option].cost += profile.units[u].candidates[candidate].bytes;
      group[option].damage += unit_damage(profile, objective, u, candidate);
    }
  }
  const std::optional<KnapsackSolution> solution = solve_knapsack(groups, capacity);
  if (!solution) return std::nullopt;
  LayerTypesPlan plan;
  plan.exact = solution->exact;
  for (const int option : solution->choice) plan.types.push_back(allowed[static_cast<std::size_t>(option)]);
  for (const UnitProfile& unit : profile.units) plan.choice.push_back(plan.types[position.at(unit.unit.layer)]);
  return plan;
}

}  // namespace tqlab
