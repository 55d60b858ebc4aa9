#include "allocate/layer_ranges.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/error.h"

namespace tqlab {
namespace {

struct RangesCost {
  std::uint64_t bytes = 0;
  double damage = 0;
  int ranges = 0;  ///< how many of first/last are used (fewer flags on a tie)
  LayerRanges plan;
};

// Per (candidate, layer position), the bytes and damage of one role's units, as prefix sums over
// layers: sum over positions [from, to) of candidate c is at(c, to) - at(c, from).
class RoleSums {
 public:
  RoleSums(const Profile& profile, const Objective& objective, Role role) {
    layers_ = static_cast<int>(profile.layers.size());
    candidates_ = static_cast<int>(profile.candidates.size());
    std::map<int, int> position;
    for (int i = 0; i < layers_; ++i) position[profile.layers[static_cast<std::size_t>(i)]] = i;
    bytes_.assign(static_cast<std::size_t>(candidates_ * (layers_ + 1)), 0);
    damage_.assign(bytes_.size(), 0.0);
    for (std::size_t u = 0; u < profile.units.size(); ++u) {
      const UnitProfile& unit = profile.units[u];
      if (unit.unit.role != role) continue;
      const int layer = position.at(unit.unit.layer);
      for (int c = 0; c < candidates_; ++c) {
        bytes_[index(c, layer + 1)] += unit.candidates[static_cast<std::size_t>(c)].bytes;
        damage_[index(c, layer + 1)] += unit_damage(profile, objective, u, static_cast<std::size_t>(c));
      }
    }
    for (int c = 0; c < candidates_; ++c) {
      for (int i = 1; i <= layers_; ++i) {
        bytes_[index(c, i)] += bytes_[index(c, i - 1)];
        damage_[index(c, i)] += damage_[index(c, i - 1)];
      }
    }
  }

  int layers() const { return layers_; }
  int candidates() const { return candidates_; }

  RangesCost cost(const LayerRanges& plan) const {
    const int last_from = layers_ - plan.last_layers;
    RangesCost out;
    out.plan = plan;
    out.ranges = (plan.first_layers > 0) + (plan.last_layers > 0);
    add(out, plan.first, 0, plan.first_layers);
    add(out, plan.base, plan.first_layers, last_from);
    add(out, plan.last, last_from, layers_);
    return out;
  }

 private:
  std::size_t index(int c, int i) const { return static_cast<std::size_t>(c * (layers_ + 1) + i); }
  void add(RangesCost& out, int c, int from, int to) const {
    out.bytes += bytes_[index(c, to)] - bytes_[index(c, from)];
    out.damage += damage_[index(c, to)] - damage_[index(c, from)];
  }

  int layers_ = 0, candidates_ = 0;
  std::vector<std::uint64_t> bytes_;
  std::vector<double> damage_;
};

// Every plan of one role, as its Pareto frontier: ascending bytes, strictly falling damage.
std::vector<RangesCost> role_frontier(const RoleSums& sums) {
  std::vector<RangesCost> all;
  const int types = sums.candidates(), layers = sums.layers();
  for (int base = 0; base < types; ++base) {
    for (int first = 0; first < types; ++first) {
      for (int n = first == base ? 0 : 1; n <= (first == base ? 0 : layers); ++n) {
        for (int last = 0; last < types; ++last) {
          for (int m = last == base ? 0 : 1; m <= (last == base ? 0 : layers - n); ++m) {
            all.push_back(sums.cost({base, first, n, last, m}));
          }
        }
      }
    }
  }
  std::sort(all.begin(), all.end(), [](const RangesCost& a, const RangesCost& b) {
    return std::tie(a.bytes, a.damage, a.ranges) < std::tie(b.bytes, b.damage, b.ranges);
  });
  std::vector<RangesCost> frontier;
  for (const RangesCost& cost : all) {
    if (frontier.empty() || cost.damage < frontier.back().damage) frontier.push_back(cost);
  }
  return frontier;
}

}  // namespace

std::optional<RangesPlan> best_layer_ranges(const Profile& profile, const Objective& objective,
                                            std::uint64_t capacity) {
  const RoleSums key_sums(profile, objective, Role::key), value_sums(profile, objective, Role::value);
  const std::vector<RangesCost> keys = role_frontier(key_sums), values = role_frontier(value_sums);
  std::optional<std::pair<const RangesCost*, const RangesCost*>> best;
  for (const RangesCost& key : keys) {
    if (key.bytes > capacity) break;
    // The dearest value plan that still fits is the least damaging (the frontier's damage falls).
    const auto fits = std::upper_bound(values.begin(), values.end(), capacity - key.bytes,
                                       [](std::uint64_t room, const RangesCost& value) { return room < value.bytes; });
    if (fits == values.begin()) continue;
    const RangesCost& value = *(fits - 1);
    const auto rank = [](const RangesCost& k, const RangesCost& v) {
      return std::make_tuple(k.damage + v.damage, k.bytes + v.bytes, k.ranges + v.ranges);
    };
    if (!best || rank(key, value) < rank(*best->first, *best->second)) best = std::make_pair(&key, &value);
  }
  if (!best) return std::nullopt;
  RangesPlan plan{best->first->plan, best->second->plan, {}};
  std::map<int, int> position;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) position[profile.layers[i]] = static_cast<int>(i);
  const int layers = static_cast<int>(profile.layers.size());
  for (const UnitProfile& unit : profile.units) {
    const LayerRanges& ranges = unit.unit.role == Role::key ? plan.key : plan.value;
    const int at = position.at(unit.unit.layer);
    plan.choice.push_back(at < ranges.first_layers            ? ranges.first
                          : at >= layers - ranges.last_layers ? ranges.last
                                                              : ranges.base);
  }
  return plan;
}

}  // namespace tqlab
