// How well an allocation made from one profile does by another profile's measure: the offline
// profile's allocation (at the default or a calibrated key weight) against the model profile's
// at the same budget, units and candidates.
#pragma once

#include <string>
#include <vector>

#include "allocate/objective.h"
#include "allocate/profile.h"

namespace tqlab {

struct ProfileAgreement {
  std::string name;  ///< "offline, key weight 1", ...
  double key_weight = 1;
  double same_choice_share = 0;         ///< units given the same candidate as the reference allocation
  double mean_abs_bits_difference = 0;  ///< over units, weighted by their values: |bits - reference bits|
  double reference_damage = 0;          ///< the reference profile's predicted damage of this allocation
  double reference_optimum = 0;         ///< ... of the reference's own allocation
};

/// `choice` against `reference_choice`, both candidate indices per unit of `reference` (whose
/// damages judge them, under `reference_objective`).
ProfileAgreement agreement_with(std::string name, double key_weight, const std::vector<int>& choice,
                                const Profile& reference, const Objective& reference_objective,
                                const std::vector<int>& reference_choice);

}  // namespace tqlab
