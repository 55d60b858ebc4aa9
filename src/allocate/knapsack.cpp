#include "allocate/knapsack.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"

namespace tqlab {
namespace {

void check_groups(const std::vector<KnapsackGroup>& groups) {
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty() || groups[g].size() > 255) {
      throw InternalError(fmt::format("knapsack: group {} has {} options (1..255)", g, groups[g].size()));
    }
  }
}

// Option indices of a group by ascending cost, then index: the order ties are broken in.
std::vector<int> by_cost(const KnapsackGroup& group) {
  std::vector<int> order(group.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return group[static_cast<std::size_t>(a)].cost < group[static_cast<std::size_t>(b)].cost;
  });
  return order;
}

std::uint64_t cheapest(const KnapsackGroup& group) {
  std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
  for (const KnapsackOption& option : group) least = std::min(least, option.cost);
  return least;
}

KnapsackSolution evaluate(const std::vector<KnapsackGroup>& groups, std::vector<int> choice) {
  KnapsackSolution solution;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const KnapsackOption& option = groups[g][static_cast<std::size_t>(choice[g])];
    solution.cost += option.cost;
    solution.damage += option.damage;
  }
  solution.choice = std::move(choice);
  return solution;
}

}  // namespace

ExactKnapsack::ExactKnapsack(std::vector<KnapsackGroup> groups) : groups_(std::move(groups)) {
  check_groups(groups_);
  std::uint64_t step = 0;
  for (const KnapsackGroup& group : groups_) {
    const std::uint64_t least = cheapest(group);
    base_cost_ += least;
    for (const KnapsackOption& option : group) step = std::gcd(step, option.cost - least);
  }
  step_ = step == 0 ? 1 : step;
  states_ = 1;
  for (const KnapsackGroup& group : groups_) {
    const std::uint64_t least = cheapest(group);
    std::vector<std::uint64_t>& offsets = offsets_.emplace_back();
    std::uint64_t largest = 0;
    for (const KnapsackOption& option : group) {
      offsets.push_back((option.cost - least) / step_);
      largest = std::max(largest, offsets.back());
    }
    states_ += largest;
  }
  if (groups_.size() * static_cast<long double>(states_) > static_cast<long double>(kMaxExactTableEntries) * 8) {
    throw InternalError(
        fmt::format("knapsack: a table of {} groups x {} states is too large", groups_.size(), states_));
  }
  // least_[s]: the least damage of the groups so far with offsets summing to at most s.
  least_.assign(states_, 0.0);
  std::vector<double> next(states_);
  choice_.assign(groups_.size() * states_, 0);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const KnapsackGroup& group = groups_[g];
    const std::vector<int> order = by_cost(group);
    std::uint8_t* choices = choice_.data() + g * states_;
    for (std::uint64_t s = 0; s < states_; ++s) {
      double best = std::numeric_limits<double>::infinity();
      int best_option = order.front();
      for (int j : order) {
        const std::uint64_t offset = offsets_[g][static_cast<std::size_t>(j)];
        if (offset > s) break;  // ascending costs: the rest are dearer
        const double damage = least_[s - offset] + group[static_cast<std::size_t>(j)].damage;
        if (damage < best) {
          best = damage;
          best_option = j;
        }
      }
      next[s] = best;
      choices[s] = static_cast<std::uint8_t>(best_option);
    }
    least_.swap(next);
  }
}

std::uint64_t ExactKnapsack::table_entries(const std::vector<KnapsackGroup>& groups) {
  check_groups(groups);
  std::uint64_t step = 0;
  for (const KnapsackGroup& group : groups) {
    const std::uint64_t least = cheapest(group);
    for (const KnapsackOption& option : group) step = std::gcd(step, option.cost - least);
  }
  if (step == 0) step = 1;
  long double states = 1;
  for (const KnapsackGroup& group : groups) {
    const std::uint64_t least = cheapest(group);
    std::uint64_t largest = 0;
    for (const KnapsackOption& option : group) largest = std::max(largest, (option.cost - least) / step);
    states += static_cast<long double>(largest);
  }
  const long double entries = states * static_cast<long double>(groups.size());
  return entries >= 1.8e19L ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(entries);
}

std::optional<std::uint64_t> ExactKnapsack::state_of(std::uint64_t capacity) const {
  if (capacity < base_cost_) return std::nullopt;
  return std::min<std::uint64_t>((capacity - base_cost_) / step_, states_ - 1);
}

std::optional<double> ExactKnapsack::least_damage(std::uint64_t capacity) const {
  const std::optional<std::uint64_t> state = state_of(capacity);
  if (!state) return std::nullopt;
  return least_[*state];
}

std::optional<KnapsackSolution> ExactKnapsack::solve(std::uint64_t capacity) const {
  const std::optional<std::uint64_t> state = state_of(capacity);
  if (!state) return std::nullopt;
  std::vector<int> choice(groups_.size());
  std::uint64_t s = *state;
  for (std::size_t g = groups_.size(); g-- > 0;) {
    const int j = choice_[g * states_ + s];
    choice[g] = j;
    s -= offsets_[g][static_cast<std::size_t>(j)];
  }
  KnapsackSolution solution = evaluate(groups_, std::move(choice));
  solution.lower_bound = solution.damage;
  solution.exact = true;
  return solution;
}

namespace {

// A group's lower convex hull: its options by ascending cost with falling damage, each step
// saving less damage per byte than the one before.
std::vector<int> lower_convex_hull(const KnapsackGroup& group) {
  std::vector<int> hull;
  for (int j : by_cost(group)) {
    const KnapsackOption& option = group[static_cast<std::size_t>(j)];
    if (!hull.empty()) {
      const KnapsackOption& last = group[static_cast<std::size_t>(hull.back())];
      if (option.damage >= last.damage) continue;     // dearer and no better
      if (option.cost == last.cost) hull.pop_back();  // as dear and better
    }
    // Drop the last point while it lies on or above the chord to this one.
    while (hull.size() >= 2) {
      const KnapsackOption& a = group[static_cast<std::size_t>(hull[hull.size() - 2])];
      const KnapsackOption& b = group[static_cast<std::size_t>(hull.back())];
      const long double left = static_cast<long double>(b.damage - a.damage) * (option.cost - a.cost);
      const long double right = static_cast<long double>(option.damage - a.damage) * (b.cost - a.cost);
      if (left < right) break;  // b is below the chord: keep it
      hull.pop_back();
    }
    hull.push_back(j);
  }
  return hull;
}

// One step along a group's hull, from point to - 1 to point `to`.
struct HullStep {
  std::size_t group, to;
  double saving_per_byte;
};

// Every hull step by damage saved per byte, highest first (ties: group, then step order).
std::vector<HullStep> steps_by_saving(const std::vector<KnapsackGroup>& groups,
                                      const std::vector<std::vector<int>>& hulls) {
  std::vector<HullStep> steps;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t k = 1; k < hulls[g].size(); ++k) {
      const KnapsackOption& a = groups[g][static_cast<std::size_t>(hulls[g][k - 1])];
      const KnapsackOption& b = groups[g][static_cast<std::size_t>(hulls[g][k])];
      steps.push_back({g, k, (a.damage - b.damage) / static_cast<double>(b.cost - a.cost)});
    }
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const HullStep& a, const HullStep& b) { return a.saving_per_byte > b.saving_per_byte; });
  return steps;
}

// Repair: while any option of any group lowers the damage and fits, takes the best saving.
void take_fitting_savings(const std::vector<KnapsackGroup>& groups, std::uint64_t capacity, std::uint64_t cost,
                          std::vector<int>& choice) {
  while (true) {
    std::size_t best_group = groups.size();
    int best_option = -1;
    double best_saving = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const KnapsackOption& now = groups[g][static_cast<std::size_t>(choice[g])];
      for (int j : by_cost(groups[g])) {
        const KnapsackOption& option = groups[g][static_cast<std::size_t>(j)];
        if (cost - now.cost + option.cost > capacity) break;
        const double saving = now.damage - option.damage;
        if (saving > best_saving) {
          best_saving = saving;
          best_group = g;
          best_option = j;
        }
      }
    }
    if (best_group == groups.size()) return;
    cost = cost - groups[best_group][static_cast<std::size_t>(choice[best_group])].cost +
           groups[best_group][static_cast<std::size_t>(best_option)].cost;
    choice[best_group] = best_option;
  }
}

}  // namespace

std::optional<KnapsackSolution> solve_knapsack_lagrangian(const std::vector<KnapsackGroup>& groups,
                                                          std::uint64_t capacity) {
  check_groups(groups);
  std::vector<std::vector<int>> hulls;
  for (const KnapsackGroup& group : groups) hulls.push_back(lower_convex_hull(group));
  std::vector<int> choice(groups.size());
  std::vector<std::size_t> at(groups.size(), 0);
  std::uint64_t cost = 0;
  double damage = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    choice[g] = hulls[g][0];
    cost += groups[g][static_cast<std::size_t>(choice[g])].cost;
    damage += groups[g][static_cast<std::size_t>(choice[g])].damage;
  }
  if (cost > capacity) return std::nullopt;

  std::optional<double> bound;  // the LP optimum: the first step that does not fit, taken in part
  for (const HullStep& step : steps_by_saving(groups, hulls)) {
    if (at[step.group] + 1 != step.to) continue;  // an earlier step of this group did not fit
    const KnapsackOption& from = groups[step.group][static_cast<std::size_t>(hulls[step.group][step.to - 1])];
    const KnapsackOption& to = groups[step.group][static_cast<std::size_t>(hulls[step.group][step.to])];
    const std::uint64_t extra = to.cost - from.cost;
    if (cost + extra > capacity) {
      if (!bound) bound = damage - static_cast<double>(capacity - cost) * step.saving_per_byte;
      continue;
    }
    cost += extra;
    damage += to.damage - from.damage;
    at[step.group] = step.to;
    choice[step.group] = hulls[step.group][step.to];
  }
  take_fitting_savings(groups, capacity, cost, choice);
  KnapsackSolution solution = evaluate(groups, std::move(choice));
  // Every hull step fitted: each group holds its least damage, the optimum.
  solution.exact = !bound;
  solution.lower_bound = bound ? std::min(*bound, solution.damage) : solution.damage;
  return solution;
}

std::optional<KnapsackSolution> solve_knapsack_brute_force(const std::vector<KnapsackGroup>& groups,
                                                           std::uint64_t capacity) {
  check_groups(groups);
  std::optional<KnapsackSolution> best;
  std::vector<int> choice(groups.size(), 0);
  while (true) {
    KnapsackSolution candidate = evaluate(groups, choice);
    if (candidate.cost <= capacity && (!best || candidate.damage < best->damage)) best = std::move(candidate);
    std::size_t g = 0;
    for (; g < groups.size(); ++g) {
      if (++choice[g] < static_cast<int>(groups[g].size())) break;
      choice[g] = 0;
    }
    if (g == groups.size()) break;
  }
  if (best) {
    best->lower_bound = best->damage;
    best->exact = true;
  }
  return best;
}

std::optional<KnapsackSolution> solve_knapsack(const std::vector<KnapsackGroup>& groups, std::uint64_t capacity) {
  if (ExactKnapsack::table_entries(groups) <= kMaxExactTableEntries) return ExactKnapsack(groups).solve(capacity);
  return solve_knapsack_lagrangian(groups, capacity);
}

}  // namespace tqlab
