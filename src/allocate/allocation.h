// An allocation: the least predicted damage within a budget of bits per value, from a profile
// (allocate/profile.h) and an objective (allocate/objective.h), with the rules it is compared
// with (allocate/heuristics.h) predicted the same way.
//
// The budget: mean bits per value over every value of every unit, weighted by element counts,
// <= B; in bytes, sum of the units' packed bytes <= floor(B x values / 8) (a relative 1e-12 of
// slack, so that a budget printed from a run's bits admits that run). A budget given as a
// candidate spec is that candidate's uniform bytes exactly. The predicted damage of a choice is
// the sum of its units' damages (each measured alone), and each metric's prediction the sum of
// the units' seed-mean components named like the sweep's metrics: offline attn_kl,
// attn_out_rel_err, k_rel_mse and v_rel_mse (the rel_mse of the key and of the value units);
// model e2e_kld, e2e_ln_ppl_ratio and e2e_ppl_delta_pct = 100 (exp(e2e_ln_ppl_ratio) - 1). How
// far the mix's measured value is from the sum is what --verify measures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "allocate/objective.h"
#include "allocate/profile.h"
#include "kv/layered_spec.h"

namespace tqlab {

struct Budget {
  double bits = 0;             ///< mean bits per value allowed
  std::uint64_t capacity = 0;  ///< packed bytes allowed
  std::string given;           ///< as given: "3.25", or a spec ("tq:b=3,nc")
};

/// "3.25" (bits per value, > 0) or one of the profile's candidates (its uniform bits).
/// InputError naming `option` otherwise.
Budget resolve_budget(const Profile& profile, std::string_view text, std::string_view option);

/// A choice of one candidate per unit with what it costs and what the profile predicts for it.
struct ScoredChoice {
  std::string name;         ///< "allocation", "uniform tq:b=3,nc", "boundary"
  std::vector<int> choice;  ///< candidate index per unit
  std::uint64_t bytes = 0;
  double bits = 0;                                        ///< bits per value
  double damage = 0;                                      ///< predicted: the sum of the units' damages
  std::vector<std::pair<std::string, double>> predicted;  ///< predicted metrics, named as a sweep names them
};

/// The predicted metrics of `choice` (above), in that order.
std::vector<std::pair<std::string, double>> predicted_metrics(const Profile& profile, const std::vector<int>& choice);

ScoredChoice score_choice(const Profile& profile, const Objective& objective, std::string name,
                          std::vector<int> choice);

/// The predicted metric `name` of `choice`; nullopt when it has none.
std::optional<double> predicted_value(const ScoredChoice& choice, std::string_view name);

/// The optimum's predicted damage at one budget.
struct FrontierPoint {
  double bits = 0;         ///< the budget
  double damage = 0;       ///< the least predicted damage within it
  double lower_bound = 0;  ///< == damage from the exact solver
};

struct AllocationResult {
  Budget budget;
  Objective objective;
  ScoredChoice allocation;
  std::string solver;                    ///< "dp" (exact) or "lagrangian"
  double lower_bound = 0;                ///< no choice within the budget predicts less damage
  std::vector<ScoredChoice> uniform;     ///< every candidate whose uniform choice fits, by ascending bits
  std::optional<ScoredChoice> boundary;  ///< the boundary rule (none when no uniform choice fits)
  /// The optimum at budgets from the cheapest to the dearest uniform choice (kFrontierPoints
  /// evenly spaced, and every uniform choice's bits), ascending.
  std::vector<FrontierPoint> frontier;
  std::vector<ScoredChoice> uniform_curve;  ///< every candidate's uniform choice, by ascending bits
};

inline constexpr int kFrontierPoints = 41;

/// Solves at `budget`. InputError when even the cheapest candidate of every unit exceeds it.
AllocationResult allocate_bits(const Profile& profile, const Objective& objective, const Budget& budget);

/// The specs of one role of a choice as a sweep run takes them (kv/layered_spec.h): the most
/// frequent spec as the default (ties: the first unit's), each layer whose units all differ from
/// it as a layer spec, each other differing head as a head spec (over the layer's own most
/// frequent spec, when that is not the default).
LayeredSpec choice_spec(const Profile& profile, const std::vector<int>& choice, Role role);

/// {"k": ..., "v": ...}: the choice as a sweep run, each role as layered_spec_json() writes it.
nlohmann::ordered_json choice_run(const Profile& profile, const std::vector<int>& choice);

}  // namespace tqlab
