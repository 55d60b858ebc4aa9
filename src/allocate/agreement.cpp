#include "allocate/agreement.h"

#include <cmath>

namespace tqlab {

ProfileAgreement agreement_with(std::string name, double key_weight, const std::vector<int>& choice,
                                const Profile& reference, const Objective& reference_objective,
                                const std::vector<int>& reference_choice) {
  ProfileAgreement agreement;
  agreement.name = std::move(name);
  agreement.key_weight = key_weight;
  double same = 0, difference = 0;
  for (std::size_t u = 0; u < reference.units.size(); ++u) {
    const UnitProfile& unit = reference.units[u];
    const auto c = static_cast<std::size_t>(choice[u]), r = static_cast<std::size_t>(reference_choice[u]);
    same += c == r ? 1 : 0;
    const double bits = 8.0 * static_cast<double>(unit.candidates[c].bytes) / static_cast<double>(unit.values);
    const double reference_bits =
        8.0 * static_cast<double>(unit.candidates[r].bytes) / static_cast<double>(unit.values);
    difference += std::abs(bits - reference_bits) * static_cast<double>(unit.values);
    agreement.reference_damage += unit_damage(reference, reference_objective, u, c);
    agreement.reference_optimum += unit_damage(reference, reference_objective, u, r);
  }
  agreement.same_choice_share = same / static_cast<double>(reference.units.size());
  agreement.mean_abs_bits_difference = difference / static_cast<double>(reference.total_values());
  return agreement;
}

}  // namespace tqlab
