// Plans of the shape "one type per layer, its keys and values alike" (TensorRT-LLM's per-layer KV
// cache dtype, given as ranges over layers: PR #13695), solved exactly on the additive profile: a
// multiple-choice knapsack with one group per layer and one option per type (allocate/knapsack.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "allocate/objective.h"
#include "allocate/profile.h"

namespace tqlab {

struct LayerTypesPlan {
  std::vector<int> types;   ///< per layer position (profile.layers order), an index into `allowed`'s candidates
  std::vector<int> choice;  ///< the candidate of every unit of the profile
  bool exact = true;        ///< false when the knapsack fell back to its Lagrangian (solve_knapsack)
};

/// The plan of least summed damage whose units' bytes fit `capacity`, each layer's keys and values
/// (every head) at one of `allowed` (indices into the profile's candidates); nullopt when even the
/// cheapest does not fit. Ties: solve_knapsack's (the cheaper option, then the lower index).
std::optional<LayerTypesPlan> best_layer_types(const Profile& profile, const Objective& objective,
                                               std::uint64_t capacity, const std::vector<int>& allowed);

}  // namespace tqlab
