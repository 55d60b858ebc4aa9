#include "allocate/heuristics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tqlab {

std::vector<int> ladder_order(const Profile& profile) {
  std::vector<std::uint64_t> bytes;
  for (std::size_t c = 0; c < profile.candidates.size(); ++c)
    bytes.push_back(profile.bytes_of(uniform_choice(profile, static_cast<int>(c))));
  std::vector<int> order(profile.candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return bytes[static_cast<std::size_t>(a)] < bytes[static_cast<std::size_t>(b)];
  });
  return order;
}

std::vector<int> uniform_choice(const Profile& profile, int candidate) {
  return std::vector<int>(profile.units.size(), candidate);
}

int uniform_below(const Profile& profile, std::uint64_t capacity) {
  int best = -1;
  for (int candidate : ladder_order(profile)) {
    if (profile.bytes_of(uniform_choice(profile, candidate)) <= capacity) best = candidate;
  }
  return best;
}

int boundary_layers(int layers) { return std::min(2, layers / 4); }

std::optional<std::vector<int>> boundary_choice(const Profile& profile, std::uint64_t capacity) {
  const std::vector<int> ladder = ladder_order(profile);
  const int below = uniform_below(profile, capacity);
  if (below < 0) return std::nullopt;
  const int top = static_cast<int>(ladder.size()) - 1;
  const int r = static_cast<int>(std::find(ladder.begin(), ladder.end(), below) - ladder.begin());
  const int layers = static_cast<int>(profile.layers.size());
  const int edge = boundary_layers(layers);
  std::vector<int> rung(static_cast<std::size_t>(layers), r);
  std::vector<int> middle;
  for (int position = 0; position < layers; ++position) {
    if (position < edge || position >= layers - edge) {
      rung[static_cast<std::size_t>(position)] = std::min(r + 1, top);
    } else {
      middle.push_back(position);
    }
  }
  const double centre = (layers - 1) / 2.0;
  std::stable_sort(middle.begin(), middle.end(),
                   [&](int a, int b) { return std::abs(a - centre) < std::abs(b - centre); });
  std::vector<int> boundary;
  for (int position = 0; position < layers; ++position) {
    if (std::find(middle.begin(), middle.end(), position) == middle.end()) boundary.push_back(position);
  }
  const auto choice_of = [&] {
    std::vector<int> choice;
    for (const UnitProfile& unit : profile.units) {
      const auto position = std::find(profile.layers.begin(), profile.layers.end(), unit.unit.layer);
      choice.push_back(
          ladder[static_cast<std::size_t>(rung[static_cast<std::size_t>(position - profile.layers.begin())])]);
    }
    return choice;
  };
  // Lowers the next layer of `order` that can go lower (cycling from `next`); false when none can.
  const auto lower_one = [&](const std::vector<int>& order, std::size_t& next) {
    for (std::size_t tried = 0; tried < order.size(); ++tried) {
      const int position = order[(next + tried) % order.size()];
      if (rung[static_cast<std::size_t>(position)] > 0) {
        --rung[static_cast<std::size_t>(position)];
        next = (next + tried + 1) % order.size();
        return true;
      }
    }
    return false;
  };
  std::size_t next_middle = 0, next_boundary = 0;
  std::vector<int> choice = choice_of();
  while (profile.bytes_of(choice) > capacity) {
    if (!lower_one(middle, next_middle) && !lower_one(boundary, next_boundary)) break;
    choice = choice_of();
  }
  return choice;
}

}  // namespace tqlab
