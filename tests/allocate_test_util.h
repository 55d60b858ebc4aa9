// A random sensitivity profile for tqlab allocate's solver tests (allocate_test.cpp,
// allocate_rows_test.cpp).
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "allocate/allocation_units.h"
#include "allocate/profile.h"

namespace tqlab {

// A profile of `layers` layers x 2 heads x K/V units whose damages fall with bits at random rates.
inline Profile random_profile(std::mt19937_64& rng, int layers, const std::vector<std::string>& candidates) {
  Profile profile;
  profile.kind = ProfileKind::model;
  profile.granularity = Granularity::layer_head;
  profile.candidates = candidates;
  profile.seeds = {0};
  std::vector<LayerHeads> shape;
  for (int layer = 0; layer < layers; ++layer) {
    shape.push_back({layer, 2});
    profile.layers.push_back(layer);
  }
  std::uniform_real_distribution<double> sensitivity(0.01, 5.0);
  for (const AllocationUnit& unit : allocation_units(shape, Granularity::layer_head)) {
    UnitProfile& entry = profile.units.emplace_back();
    entry.unit = unit;
    entry.values = 64 * 96;
    const double scale = sensitivity(rng);
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      UnitMeasurement& measured = entry.candidates.emplace_back();
      const int bits = static_cast<int>(c) + 2;
      measured.bytes = entry.values * bits / 8 + 2 * 96;  // packed values plus a norm per vector
      const double damage = scale * std::exp2(-2.0 * bits);
      measured.components = {{damage}, {damage / 2}};
    }
  }
  return profile;
}

}  // namespace tqlab
