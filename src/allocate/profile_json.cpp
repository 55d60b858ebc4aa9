#include "allocate/profile_json.h"

#include <algorithm>
#include <limits>

#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "io/json_reader.h"
#include "io/read_back.h"

namespace tqlab {

nlohmann::ordered_json profile_json(const Profile& profile, const Objective* objective) {
  const std::vector<std::string>& names = profile_components(profile.kind);
  nlohmann::ordered_json units = nlohmann::ordered_json::array();
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    const UnitProfile& unit = profile.units[u];
    nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
    for (std::size_t c = 0; c < unit.candidates.size(); ++c) {
      const UnitMeasurement& measured = unit.candidates[c];
      nlohmann::ordered_json entry{
          {"spec", profile.candidates[c]},
          {"bytes", measured.bytes},
          {"bits", 8.0 * static_cast<double>(measured.bytes) / static_cast<double>(unit.values)}};
      if (objective != nullptr) entry["damage"] = unit_damage(profile, *objective, u, c);
      nlohmann::ordered_json components = nlohmann::ordered_json::object();
      for (std::size_t k = 0; k < names.size(); ++k) components[names[k]] = measured.components[k];
      entry["components"] = std::move(components);
      candidates.push_back(std::move(entry));
    }
    units.push_back({{"unit", unit.unit.name()},
                     {"layer", unit.unit.layer},
                     {"head", unit.unit.head < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(unit.unit.head)},
                     {"role", role_name(unit.unit.role)},
                     {"values", unit.values},
                     {"candidates", std::move(candidates)}});
  }
  // The source's keys sorted: the same bytes whether the profile was measured here or read back
  // from a cache file or shards (nlohmann::json keeps keys sorted).
  nlohmann::ordered_json source = profile.source.empty()
                                      ? nlohmann::ordered_json::object()
                                      : nlohmann::ordered_json(nlohmann::json::parse(profile.source));
  return {
      {"kind", profile_kind_name(profile.kind)},
      {"granularity", granularity_name(profile.granularity)},
      {"numerics", profile.numerics},
      {"content_key", profile.content_key},
      {"source", std::move(source)},
      {"candidates", profile.candidates},
      {"seeds", profile.seeds},
      {"layers", profile.layers},
      {"components", names},
      {"seconds", profile.seconds},
      {"layers_computed_share", profile.layers_computed_share ? nlohmann::ordered_json(*profile.layers_computed_share)
                                                              : nlohmann::ordered_json()},
      {"units", std::move(units)}};
}

namespace {

std::vector<std::string> unit_names(const std::vector<UnitProfile>& units) {
  std::vector<std::string> names;
  for (const UnitProfile& unit : units) names.push_back(unit.unit.name());
  return names;
}

// The units a profile of `layers` must hold: every layer of its "layers", with as many kv heads
// as its units name (the config's count is checked by check_profile_fits).
std::vector<std::string> expected_unit_names(const Profile& profile) {
  std::vector<LayerHeads> layers;
  for (int layer : profile.layers) {
    int heads = 1;
    for (const UnitProfile& unit : profile.units) {
      if (unit.unit.layer == layer) heads = std::max(heads, unit.unit.head + 1);
    }
    layers.push_back({layer, heads});
  }
  std::vector<std::string> names;
  for (const AllocationUnit& unit : allocation_units(layers, profile.granularity)) names.push_back(unit.name());
  return names;
}

template <typename T>
void check_distinct(const JsonReader& list, const std::vector<T>& values, std::string_view what) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (values[i] == values[j]) list.fail("{} {} and {} are the same {}", what, j, i, fmt::format("{}", values[i]));
    }
  }
}

// A profile's header: kind, granularity, content key, source, candidates, seeds, layers, timing.
void read_profile_header(const JsonReader& root, Profile& profile) {
  const std::string kind = root.at("kind").as_string();
  const std::optional<ProfileKind> parsed_kind = parse_profile_kind(kind);
  if (!parsed_kind) root.at("kind").fail("'{}' is not a profile kind", kind);
  profile.kind = *parsed_kind;
  const std::optional<Granularity> granularity = parse_granularity(root.at("granularity").as_string());
  if (!granularity) root.at("granularity").fail("not a granularity");
  profile.granularity = *granularity;
  // Documents written before profiles had an engine's numerics are tqlab's.
  if (root.has("numerics")) profile.numerics = root.at("numerics").as_string();
  profile.content_key = root.at("content_key").as_string();
  profile.source = root.at("source").value().dump();
  for (const JsonReader& spec : root.at("candidates").elements()) profile.candidates.push_back(spec.as_string());
  if (profile.candidates.empty()) root.at("candidates").fail("no candidates");
  check_distinct(root.at("candidates"), profile.candidates, "candidates");
  for (const JsonReader& seed : root.at("seeds").elements()) profile.seeds.push_back(seed.as_unsigned());
  if (profile.seeds.empty()) root.at("seeds").fail("no seeds");
  check_distinct(root.at("seeds"), profile.seeds, "seeds");
  for (const JsonReader& layer : root.at("layers").elements()) {
    profile.layers.push_back(static_cast<int>(layer.as_integer(0, std::numeric_limits<int>::max())));
    if (profile.layers.size() > 1 && profile.layers.back() <= profile.layers[profile.layers.size() - 2]) {
      layer.fail("layer {} after layer {}: layers ascend, each once", profile.layers.back(),
                 profile.layers[profile.layers.size() - 2]);
    }
  }
  profile.seconds = read_back_number(root.at("seconds"), Sign::non_negative);
  if (const JsonReader share = root.at("layers_computed_share"); !share.value().is_null()) {
    profile.layers_computed_share = read_back_number(share, Sign::non_negative);
    if (*profile.layers_computed_share > 1) {
      share.fail("{} is a share: expected at most 1", *profile.layers_computed_share);
    }
  }
}

// One candidate's measurement of `entry`: its bytes and each component's value per seed.
UnitMeasurement read_measurement(const JsonReader& candidate, const Profile& profile, const UnitProfile& entry,
                                 bool unmeasured_allowed) {
  UnitMeasurement measured;
  measured.bytes = candidate.at("bytes").as_unsigned();
  // More than 64 bits a value is no quantizer's; 0 bytes would make a candidate free.
  if ((measured.bytes == 0 && !unmeasured_allowed) || measured.bytes > 8 * entry.values) {
    candidate.at("bytes").fail("unit {}: {} bytes for {} values; expected 1 to {}", entry.unit.name(), measured.bytes,
                               entry.values, 8 * entry.values);
  }
  const JsonReader components = candidate.at("components");
  for (const std::string& name : profile_components(profile.kind)) {
    std::vector<double>& per_seed = measured.components.emplace_back();
    // A log ratio of perplexities may fall below 0 (the quantized model predicts better); nothing else may.
    const Sign sign = name == "e2e_ln_ppl_ratio" ? Sign::any : Sign::non_negative;
    for (const JsonReader& value : components.at(name).elements()) {
      if (!value.is_number()) value.fail("unit {}: expected a number, got {}", entry.unit.name(), value.type_name());
      per_seed.push_back(
          check_read_back_number(value, value.as_number(), sign, fmt::format("unit {}: ", entry.unit.name())));
    }
    if (per_seed.size() != profile.seeds.size()) {
      components.at(name).fail("unit {}: {} values for {} seeds", entry.unit.name(), per_seed.size(),
                               profile.seeds.size());
    }
  }
  return measured;
}

// One unit: its layer, head (null for a per-layer profile), role, values and every candidate's measurement.
UnitProfile read_unit(const JsonReader& unit, const Profile& profile, bool unmeasured_allowed) {
  UnitProfile entry;
  entry.unit.layer = static_cast<int>(unit.at("layer").as_integer(0, std::numeric_limits<int>::max()));
  const JsonReader head = unit.at("head");
  entry.unit.head = head.value().is_null() ? -1 : static_cast<int>(head.as_integer(0, 1 << 20));
  if ((entry.unit.head < 0) != (profile.granularity == Granularity::layer)) {
    head.fail("a {} profile's unit has {}", granularity_name(profile.granularity),
              entry.unit.head < 0 ? "a head (null here)" : "no head (null)");
  }
  const std::string role = unit.at("role").as_string();
  if (role != "key" && role != "value") unit.at("role").fail("'{}' is not key or value", role);
  entry.unit.role = role == "key" ? Role::key : Role::value;
  entry.values = unit.at("values").as_unsigned();
  if (entry.values == 0 && !unmeasured_allowed) {
    unit.at("values").fail("unit {} holds 0 values; a unit holds at least one", entry.unit.name());
  }
  const std::vector<JsonReader> candidates = unit.at("candidates").elements();
  if (candidates.size() != profile.candidates.size()) {
    unit.at("candidates")
        .fail("unit {}: {} entries for {} candidates", entry.unit.name(), candidates.size(), profile.candidates.size());
  }
  for (const JsonReader& candidate : candidates) {
    entry.candidates.push_back(read_measurement(candidate, profile, entry, unmeasured_allowed));
  }
  return entry;
}

}  // namespace

// Written by tqlab, read back: every number and every list checked (io/read_back.h).
Profile profile_from_json(const nlohmann::json& document, const std::string& path, ProfileCells cells) {
  const JsonReader root(document, path, "", "profile");
  Profile profile;
  read_profile_header(root, profile);
  for (const JsonReader& unit : root.at("units").elements()) {
    profile.units.push_back(read_unit(unit, profile, cells == ProfileCells::some));
  }
  check_each_once(root.at("units"), unit_names(profile.units), expected_unit_names(profile), "unit");
  return profile;
}

void check_profile_fits(const Profile& profile, const Profile& expected, const std::string& path) {
  const nlohmann::json empty;
  const JsonReader root(empty, path, "", "profile");
  const auto fail_at = [&](const char* key, const std::string& message) { root.fail("{}: {}", key, message); };
  if (profile.kind != expected.kind) {
    fail_at("kind", fmt::format("{}, expected {}", profile_kind_name(profile.kind), profile_kind_name(expected.kind)));
  }
  if (profile.granularity != expected.granularity) {
    fail_at("granularity", fmt::format("{}, expected {}", granularity_name(profile.granularity),
                                       granularity_name(expected.granularity)));
  }
  if (profile.numerics != expected.numerics) {
    fail_at("numerics", fmt::format("{}'s, expected {}'s", profile.numerics, expected.numerics));
  }
  if (profile.candidates != expected.candidates) {
    fail_at("candidates", fmt::format("[{}], expected this command's [{}]", fmt::join(profile.candidates, ", "),
                                      fmt::join(expected.candidates, ", ")));
  }
  if (profile.seeds != expected.seeds) {
    fail_at("seeds", fmt::format("[{}], expected the config's [{}]", fmt::join(profile.seeds, ", "),
                                 fmt::join(expected.seeds, ", ")));
  }
  nlohmann::json units = nlohmann::json::array();
  const JsonReader list(units, path, "units", "profile");
  check_each_once(list, unit_names(profile.units), unit_names(expected.units), "unit");
}

}  // namespace tqlab
