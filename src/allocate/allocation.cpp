#include "allocate/allocation.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "allocate/heuristics.h"
#include "allocate/knapsack.h"
#include "core/error.h"

namespace tqlab {
namespace {

constexpr double kBudgetSlack = 1e-12;

std::uint64_t capacity_for_bits(const Profile& profile, double bits) {
  const long double bytes = static_cast<long double>(bits) * profile.total_values() / 8 * (1 + kBudgetSlack);
  return static_cast<std::uint64_t>(std::floor(bytes));
}

std::vector<KnapsackGroup> knapsack_groups(const Profile& profile, const std::vector<std::vector<double>>& damage) {
  std::vector<KnapsackGroup> groups;
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    KnapsackGroup& group = groups.emplace_back();
    for (std::size_t c = 0; c < profile.candidates.size(); ++c) {
      group.push_back({profile.units[u].candidates[c].bytes, damage[u][c]});
    }
  }
  return groups;
}

}  // namespace

Budget resolve_budget(const Profile& profile, std::string_view text, std::string_view option) {
  Budget budget;
  budget.given = std::string(text);
  for (std::size_t c = 0; c < profile.candidates.size(); ++c) {
    if (profile.candidates[c] == text) {
      const std::vector<int> uniform = uniform_choice(profile, static_cast<int>(c));
      budget.capacity = profile.bytes_of(uniform);
      budget.bits = profile.bits_of(uniform);
      return budget;
    }
  }
  double bits = 0;
  const auto [stop, error] = std::from_chars(text.data(), text.data() + text.size(), bits);
  if (error != std::errc() || stop != text.data() + text.size()) {
    fail("{} '{}': give bits per value (e.g. 3.25) or one of the candidates ({})", option, text,
         fmt::join(profile.candidates, ", "));
  }
  if (!(bits > 0) || !std::isfinite(bits)) fail("{} {}: the budget must be a positive number of bits", option, text);
  budget.bits = bits;
  budget.capacity = capacity_for_bits(profile, bits);
  return budget;
}

ScoredChoice score_choice(const Profile& profile, const Objective& objective, std::string name,
                          std::vector<int> choice) {
  ScoredChoice scored;
  scored.name = std::move(name);
  scored.bytes = profile.bytes_of(choice);
  scored.bits = profile.bits_of(choice);
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    scored.damage += unit_damage(profile, objective, u, static_cast<std::size_t>(choice[u]));
  }
  scored.predicted = predicted_metrics(profile, choice);
  scored.choice = std::move(choice);
  return scored;
}

std::optional<double> predicted_value(const ScoredChoice& choice, std::string_view name) {
  for (const auto& [metric, value] : choice.predicted) {
    if (metric == name) return value;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, double>> predicted_metrics(const Profile& profile, const std::vector<int>& choice) {
  const auto sum = [&](const char* component, std::optional<Role> role) {
    const std::size_t index = profile.component_index(component);
    double total = 0;
    for (std::size_t u = 0; u < profile.units.size(); ++u) {
      if (role && profile.units[u].unit.role != *role) continue;
      total += profile.units[u].candidates[static_cast<std::size_t>(choice[u])].mean(index);
    }
    return total;
  };
  if (profile.kind == ProfileKind::model) {
    const double ln_ratio = sum("e2e_ln_ppl_ratio", std::nullopt);
    return {{"e2e_kld", sum("e2e_kld", std::nullopt)},
            {"e2e_ln_ppl_ratio", ln_ratio},
            {"e2e_ppl_delta_pct", 100 * std::expm1(ln_ratio)}};
  }
  return {{"attn_kl", sum("attn_kl", std::nullopt)},
          {"attn_out_rel_err", sum("attn_out_rel_err", std::nullopt)},
          {"k_rel_mse", sum("rel_mse", Role::key)},
          {"v_rel_mse", sum("rel_mse", Role::value)}};
}

AllocationResult allocate_bits(const Profile& profile, const Objective& objective, const Budget& budget) {
  AllocationResult result;
  result.budget = budget;
  result.objective = objective;
  const std::vector<KnapsackGroup> groups = knapsack_groups(profile, damage_table(profile, objective));
  const bool exact = ExactKnapsack::table_entries(groups) <= kMaxExactTableEntries;
  std::optional<ExactKnapsack> table;
  if (exact) table.emplace(groups);
  const auto solve = [&](std::uint64_t capacity) {
    return exact ? table->solve(capacity) : solve_knapsack_lagrangian(groups, capacity);
  };
  const std::optional<KnapsackSolution> solution = solve(budget.capacity);
  if (!solution) {
    std::vector<int> cheapest(profile.units.size());
    for (std::size_t u = 0; u < profile.units.size(); ++u) {
      const auto& candidates = profile.units[u].candidates;
      cheapest[u] = static_cast<int>(
          std::min_element(candidates.begin(), candidates.end(),
                           [](const UnitMeasurement& a, const UnitMeasurement& b) { return a.bytes < b.bytes; }) -
          candidates.begin());
    }
    fail("--budget {}: below the cheapest allocation the candidates allow ({:.4f} bits per value)", budget.given,
         profile.bits_of(cheapest));
  }
  result.solver = exact ? "dp" : "lagrangian";
  result.lower_bound = solution->lower_bound;
  result.allocation = score_choice(profile, objective, "allocation", solution->choice);

  const std::vector<int> ladder = ladder_order(profile);
  for (int candidate : ladder) {
    ScoredChoice uniform =
        score_choice(profile, objective, "uniform " + profile.candidates[static_cast<std::size_t>(candidate)],
                     uniform_choice(profile, candidate));
    if (uniform.bytes <= budget.capacity) result.uniform.push_back(uniform);
    result.uniform_curve.push_back(std::move(uniform));
  }
  if (std::optional<std::vector<int>> boundary = boundary_choice(profile, budget.capacity)) {
    result.boundary = score_choice(profile, objective, "boundary", std::move(*boundary));
  }
  std::vector<double> budgets;
  const double low = result.uniform_curve.front().bits, high = result.uniform_curve.back().bits;
  for (int i = 0; i < kFrontierPoints; ++i) budgets.push_back(low + (high - low) * i / (kFrontierPoints - 1));
  for (const ScoredChoice& uniform : result.uniform_curve) budgets.push_back(uniform.bits);
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
  for (double bits : budgets) {
    const std::optional<KnapsackSolution> point = solve(capacity_for_bits(profile, bits));
    if (point) result.frontier.push_back({bits, point->damage, point->lower_bound});
  }
  return result;
}

LayeredSpec choice_spec(const Profile& profile, const std::vector<int>& choice, Role role) {
  // (layer, head, spec) of the role's units; head -1: the whole layer.
  struct Entry {
    int layer, head;
    std::string spec;
  };
  std::vector<Entry> entries;
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    const AllocationUnit& unit = profile.units[u].unit;
    if (unit.role == role) {
      entries.push_back({unit.layer, unit.head, profile.candidates[static_cast<std::size_t>(choice[u])]});
    }
  }
  // The most frequent spec of `subset` (ties: `preferred` if among the most frequent, else the first).
  const auto most_frequent = [](const std::vector<const Entry*>& subset, const std::string* preferred) {
    std::map<std::string, int> count;
    for (const Entry* entry : subset) ++count[entry->spec];
    std::string best = subset.front()->spec;
    for (const Entry* entry : subset) {
      if (count[entry->spec] > count[best]) best = entry->spec;
    }
    if (preferred != nullptr && count[*preferred] == count[best]) best = *preferred;
    return best;
  };
  std::vector<const Entry*> all;
  for (const Entry& entry : entries) all.push_back(&entry);
  LayeredSpec spec;
  spec.default_spec = most_frequent(all, nullptr);
  for (int layer : profile.layers) {
    std::vector<const Entry*> of_layer;
    for (const Entry& entry : entries) {
      if (entry.layer == layer) of_layer.push_back(&entry);
    }
    if (of_layer.empty()) continue;
    const std::string layer_spec = most_frequent(of_layer, &spec.default_spec);
    if (layer_spec != spec.default_spec) spec.layer_specs[layer] = layer_spec;
    for (const Entry* entry : of_layer) {
      if (entry->head >= 0 && entry->spec != layer_spec) spec.head_specs[{layer, entry->head}] = entry->spec;
    }
  }
  return spec;
}

nlohmann::ordered_json choice_run(const Profile& profile, const std::vector<int>& choice) {
  return nlohmann::ordered_json{{"k", layered_spec_json(choice_spec(profile, choice, Role::key))},
                                {"v", layered_spec_json(choice_spec(profile, choice, Role::value))}};
}

}  // namespace tqlab
