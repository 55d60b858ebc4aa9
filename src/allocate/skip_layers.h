// Plans of the shape "one format for the keys and one for the values, except in some layers,
// which keep the model's own precision" (vLLM's --kv-cache-dtype with --kv-cache-dtype-skip-layers,
// the TurboQuant presets' boundary layers always among them), solved exactly on the additive
// profile: each free layer either quantized or kept, a two-option knapsack over the layers
// (allocate/knapsack.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "allocate/objective.h"
#include "allocate/profile.h"

namespace tqlab {

/// The formats, by index into the profile's candidates.
struct SkipLayersFormats {
  int key = 0;          ///< the keys' format in a quantized layer
  int value = 0;        ///< the values' format in a quantized layer
  int unquantized = 0;  ///< keys and values of a kept layer
};

struct SkipLayersPlan {
  std::vector<int> kept;    ///< layer numbers kept at the unquantized format, forced ones included
  std::vector<int> choice;  ///< the candidate of every unit of the profile
};

/// The plan of least summed damage whose bytes fit `capacity`, the layers numbered `forced` always
/// kept; nullopt when even the cheapest does not fit. Exact unless the knapsack's table is too
/// large (solve_knapsack: then its Lagrangian with a proven gap).
std::optional<SkipLayersPlan> best_skip_layers(const Profile& profile, const Objective& objective,
                                               std::uint64_t capacity, SkipLayersFormats formats,
                                               const std::vector<int>& forced);

}  // namespace tqlab
