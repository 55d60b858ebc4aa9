#include "allocate/layer_types.h"

#include <map>
#include <utility>

#include "allocate/knapsack.h"

namespace tqlab {

std::optional<LayerPairsPlan> best_layer_pairs(const Profile& profile, const Objective& objective,
                                               std::uint64_t capacity, const std::vector<KvPair>& options) {
  if (options.empty()) return std::nullopt;
  std::map<int, std::size_t> position;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) position[profile.layers[i]] = i;
  // One group per layer, one option per pair: the layer's key units at its key format and its value
  // units at its value format, bytes and damages summed (the profile is additive over units).
  std::vector<KnapsackGroup> groups(profile.layers.size(), KnapsackGroup(options.size()));
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    const UnitProfile& unit = profile.units[u];
    KnapsackGroup& group = groups[position.at(unit.unit.layer)];
    for (std::size_t option = 0; option < options.size(); ++option) {
      const KvPair pair = options[option];
      const auto candidate = static_cast<std::size_t>(unit.unit.role == Role::key ? pair.key : pair.value);
      group[option].cost += unit.candidates[candidate].bytes;
      group[option].damage += unit_damage(profile, objective, u, candidate);
    }
  }
  const std::optional<KnapsackSolution> solution = solve_knapsack(groups, capacity);
  if (!solution) return std::nullopt;
  LayerPairsPlan plan;
  plan.exact = solution->exact;
  plan.options = solution->choice;
  for (const UnitProfile& unit : profile.units) {
    const KvPair pair = options[static_cast<std::size_t>(plan.options[position.at(unit.unit.layer)])];
    plan.choice.push_back(unit.unit.role == Role::key ? pair.key : pair.value);
  }
  return plan;
}

std::optional<LayerTypesPlan> best_layer_types(const Profile& profile, const Objective& objective,
                                               std::uint64_t capacity, const std::vector<int>& allowed) {
  std::vector<KvPair> tied;
  tied.reserve(allowed.size());
  for (const int type : allowed) tied.push_back({type, type});
  std::optional<LayerPairsPlan> pairs = best_layer_pairs(profile, objective, capacity, tied);
  if (!pairs) return std::nullopt;
  LayerTypesPlan plan;
  plan.exact = pairs->exact;
  plan.choice = std::move(pairs->choice);
  for (const int option : pairs->options) plan.types.push_back(allowed[static_cast<std::size_t>(option)]);
  return plan;
}

}  // namespace tqlab
