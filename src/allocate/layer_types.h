// Plans of the shape "one option per layer, every head of the layer alike", solved exactly on the
// additive profile: a multiple-choice knapsack with one group per layer (allocate/knapsack.h).
//   best_layer_pairs  an option is a (key format, value format) pair: Model-Optimizer's layer-wise KV
//                     AutoQuant chooses per attention layer among FP8 K/V, FP8-K/NVFP4-V and NVFP4 K/V
//                     (Model-Optimizer PR #2272, mtq.auto_quantize_kv_cache).
//   best_layer_types  the tied case, keys and values at one format: TensorRT-LLM's per-layer KV cache
//                     dtype (PR #13695, ranges over layers) and vLLM's layer map of a ModelOpt checkpoint
//                     (vLLM PR #56116: a layer's keys and values at its quant_algo).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "allocate/objective.h"
#include "allocate/profile.h"

namespace tqlab {

/// A layer's keys' and values' formats, as indices into the profile's candidates.
struct KvPair {
  int key = 0;
  int value = 0;
};

struct LayerPairsPlan {
  std::vector<int> options;  ///< per layer position (profile.layers order), an index into the `options` given
  std::vector<int> choice;   ///< the candidate of every unit of the profile
  bool exact = true;         ///< false when the knapsack fell back to its Lagrangian (solve_knapsack)
};

/// The plan of least summed damage whose units' bytes fit `capacity`, each layer's keys (every head)
/// at one option's key format and its values at the same option's value format; nullopt when even the
/// cheapest does not fit, or `options` is empty. Ties: solve_knapsack's (the cheaper option, then the
/// lower index).
std::optional<LayerPairsPlan> best_layer_pairs(const Profile& profile, const Objective& objective,
                                               std::uint64_t capacity, const std::vector<KvPair>& options);

struct LayerTypesPlan {
  std::vector<int> types;   ///< per layer position (profile.layers order), an index into `allowed`'s candidates
  std::vector<int> choice;  ///< the candidate of every unit of the profile
  bool exact = true;        ///< false when the knapsack fell back to its Lagrangian (solve_knapsack)
};

/// best_layer_pairs with keys and values tied: each layer's keys and values (every head) at one of
/// `allowed` (indices into the profile's candidates).
std::optional<LayerTypesPlan> best_layer_types(const Profile& profile, const Objective& objective,
                                               std::uint64_t capacity, const std::vector<int>& allowed);

}  // namespace tqlab
