// Plans of the shape "the first N layers at one type, the last M at another, the rest at a third",
// chosen for the keys and for the values separately (ik_llama.cpp's -ctk/-ctk-first/-ctk-last and
// the same for V), solved exactly on the additive profile: every plan of each role, reduced to its
// Pareto frontier of (bytes, damage), then the best key plan and value plan that fit together.
//
// A role has C x (1 + C L) x (1 + C L) / 2 plans at most (C candidates, L layers; a range of no
// layers, or of the base's own type, counted once): about 84 thousand at C = 7, L = 22.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "allocate/objective.h"
#include "allocate/profile.h"

namespace tqlab {

/// One role's plan, candidates by index into the profile's candidates.
struct LayerRanges {
  int base = 0;          ///< the type of the layers in neither range
  int first = 0;         ///< the type of the first `first_layers` layers (== base when none)
  int first_layers = 0;  ///< N
  int last = 0;          ///< the type of the last `last_layers` layers (== base when none)
  int last_layers = 0;   ///< M; N + M <= the profile's layers
};

struct RangesPlan {
  LayerRanges key, value;
  std::vector<int> choice;  ///< the candidate of every unit of the profile
};

/// The plan of least summed damage whose units' bytes fit `capacity`; ties: fewer bytes, then
/// fewer ranges. nullopt when none fits.
std::optional<RangesPlan> best_layer_ranges(const Profile& profile, const Objective& objective, std::uint64_t capacity);

}  // namespace tqlab
