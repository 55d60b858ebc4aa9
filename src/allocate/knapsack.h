// The multiple-choice knapsack an allocation solves: groups g = 0..G-1 (the units), each with
// options j (the candidates) of integer cost c_gj (packed bytes) and real damage d_gj; choose one
// option per group with sum c <= capacity and the least sum d.
//
// Two solvers and a reference:
//   ExactKnapsack   dynamic programming over costs. Each group's costs are taken relative to its
//                   cheapest option and divided by the greatest common divisor of all those
//                   offsets (packed sizes share large factors: tokens x bytes per token), so the
//                   table has G x S entries, S = sum_g max_j offset_gj / gcd + 1. One table
//                   answers every capacity: solve(c) backtracks from c. Exact.
//   solve_knapsack_lagrangian
//                   for tables too large: each group's lower convex hull of (cost, damage), hull
//                   steps taken greedily by damage saved per byte (the Lagrangian relaxation,
//                   whose fractional optimum is the linear-programming bound; Sinha and Zoltners,
//                   "The multiple-choice knapsack problem", Operations Research 27, 1979), then
//                   repaired: later steps that still fit, then any option of any group that lowers
//                   the damage and fits. lower_bound is the LP bound, so damage - lower_bound is
//                   a proven optimality gap.
//   solve_knapsack_brute_force
//                   every assignment enumerated: the naive reference the tests hold both to.
// Ties between equal damages go to the cheaper option, then the lower index, so the choice is
// deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tqlab {

struct KnapsackOption {
  std::uint64_t cost = 0;
  double damage = 0;
};
using KnapsackGroup = std::vector<KnapsackOption>;  ///< at least one option, at most 255

struct KnapsackSolution {
  std::vector<int> choice;  ///< the option of each group
  std::uint64_t cost = 0;   ///< sum of the chosen costs
  double damage = 0;        ///< sum of the chosen damages
  double lower_bound = 0;   ///< no choice within the capacity has less damage (== damage when exact)
  bool exact = false;       ///< proven optimal
};

class ExactKnapsack {
 public:
  /// The table for every capacity up to the cost of the dearest choice.
  explicit ExactKnapsack(std::vector<KnapsackGroup> groups);

  /// Table entries (groups x cost states) the groups need: what the table would take in bytes.
  static std::uint64_t table_entries(const std::vector<KnapsackGroup>& groups);

  /// The least-damage choice within `capacity`; nullopt when the cheapest options exceed it.
  std::optional<KnapsackSolution> solve(std::uint64_t capacity) const;

  /// The least damage within `capacity` (nullopt as above), without the choice.
  std::optional<double> least_damage(std::uint64_t capacity) const;

 private:
  std::optional<std::uint64_t> state_of(std::uint64_t capacity) const;

  std::vector<KnapsackGroup> groups_;
  std::uint64_t base_cost_ = 0;  // sum of each group's cheapest cost
  std::uint64_t step_ = 1;       // the gcd of every offset
  std::uint64_t states_ = 1;
  std::vector<std::vector<std::uint64_t>> offsets_;  // [group][option], in steps
  std::vector<double> least_;                        // [state]: the optimum over every group
  std::vector<std::uint8_t> choice_;                 // [group * states + state]
};

/// Lagrangian relaxation on lower convex hulls + repair, with a proven lower bound (above).
std::optional<KnapsackSolution> solve_knapsack_lagrangian(const std::vector<KnapsackGroup>& groups,
                                                          std::uint64_t capacity);

/// Every assignment enumerated (prod_g options): for tests.
std::optional<KnapsackSolution> solve_knapsack_brute_force(const std::vector<KnapsackGroup>& groups,
                                                           std::uint64_t capacity);

/// Table entries above which solve_knapsack() takes the Lagrangian (128 MiB of choices).
inline constexpr std::uint64_t kMaxExactTableEntries = std::uint64_t{1} << 27;

/// ExactKnapsack when its table fits kMaxExactTableEntries, else the Lagrangian.
std::optional<KnapsackSolution> solve_knapsack(const std::vector<KnapsackGroup>& groups, std::uint64_t capacity);

}  // namespace tqlab
