#include "allocate/profile.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/name_table.h"

namespace tqlab {

namespace {

constexpr auto kProfileKindNames =
    make_name_table<ProfileKind>({{ProfileKind::offline, "offline"}, {ProfileKind::model, "model"}});

}  // namespace

const char* profile_kind_name(ProfileKind kind) { return kProfileKindNames.name(kind).data(); }

std::optional<ProfileKind> parse_profile_kind(std::string_view name) { return kProfileKindNames.parse(name); }

const std::vector<std::string>& profile_components(ProfileKind kind) {
  static const std::vector<std::string> offline{"attn_kl", "attn_out_rel_err", "rel_mse"};
  static const std::vector<std::string> model{"e2e_kld", "e2e_ln_ppl_ratio"};
  return kind == ProfileKind::offline ? offline : model;
}

double UnitMeasurement::mean(std::size_t index) const {
  const std::vector<double>& per_seed = components.at(index);
  double sum = 0;
  for (double value : per_seed) sum += value;
  return per_seed.empty() ? 0.0 : sum / static_cast<double>(per_seed.size());
}

std::uint64_t Profile::total_values() const {
  std::uint64_t total = 0;
  for (const UnitProfile& unit : units) total += unit.values;
  return total;
}

std::uint64_t Profile::bytes_of(const std::vector<int>& choice) const {
  std::uint64_t bytes = 0;
  for (std::size_t u = 0; u < units.size(); ++u)
    bytes += units[u].candidates.at(static_cast<std::size_t>(choice[u])).bytes;
  return bytes;
}

double Profile::bits_of(const std::vector<int>& choice) const {
  return 8.0 * static_cast<double>(bytes_of(choice)) / static_cast<double>(total_values());
}

std::size_t Profile::component_index(std::string_view name) const {
  const std::vector<std::string>& names = profile_components(kind);
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  throw InternalError(fmt::format("a {} profile has no component '{}'", profile_kind_name(kind), name));
}

Profile profile_by_layer(const Profile& by_head) {
  if (by_head.granularity == Granularity::layer) return by_head;
  if (by_head.kind != ProfileKind::offline) {
    throw InternalError("profile_by_layer: a model profile does not add up over heads");
  }
  Profile out = by_head;
  out.granularity = Granularity::layer;
  out.units.clear();
  for (const UnitProfile& unit : by_head.units) {
    const AllocationUnit layer_unit{unit.unit.layer, -1, unit.unit.role};
    UnitProfile* target = nullptr;
    for (UnitProfile& existing : out.units) {
      if (existing.unit.layer == layer_unit.layer && existing.unit.role == layer_unit.role) target = &existing;
    }
    if (target == nullptr) {
      target = &out.units.emplace_back();
      target->unit = layer_unit;
      target->candidates = unit.candidates;
      target->values = unit.values;
      continue;
    }
    target->values += unit.values;
    for (std::size_t c = 0; c < unit.candidates.size(); ++c) {
      UnitMeasurement& sum = target->candidates[c];
      const UnitMeasurement& part = unit.candidates[c];
      sum.bytes += part.bytes;
      for (std::size_t k = 0; k < part.components.size(); ++k) {
        for (std::size_t s = 0; s < part.components[k].size(); ++s) sum.components[k][s] += part.components[k][s];
      }
    }
  }
  return out;
}

}  // namespace tqlab
