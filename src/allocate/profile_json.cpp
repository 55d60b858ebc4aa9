#include "allocate/profile_json.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "io/json_reader.h"

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

Profile profile_from_json(const nlohmann::json& document, const std::string& path) {
  const JsonReader root(document, path, "", "profile");
  Profile profile;
  const std::string kind = root.at("kind").as_string();
  const std::optional<ProfileKind> parsed_kind = parse_profile_kind(kind);
  if (!parsed_kind) root.at("kind").fail("'{}' is not a profile kind", kind);
  profile.kind = *parsed_kind;
  const std::optional<Granularity> granularity = parse_granularity(root.at("granularity").as_string());
  if (!granularity) root.at("granularity").fail("not a granularity");
  profile.granularity = *granularity;
  profile.content_key = root.at("content_key").as_string();
  profile.source = root.at("source").value().dump();
  for (const JsonReader& spec : root.at("candidates").elements()) profile.candidates.push_back(spec.as_string());
  for (const JsonReader& seed : root.at("seeds").elements()) profile.seeds.push_back(seed.as_unsigned());
  for (const JsonReader& layer : root.at("layers").elements()) {
    profile.layers.push_back(static_cast<int>(layer.as_integer(0, std::numeric_limits<int>::max())));
  }
  profile.seconds = root.at("seconds").as_number();
  if (const JsonReader share = root.at("layers_computed_share"); !share.value().is_null()) {
    profile.layers_computed_share = share.as_number();
  }
  const std::vector<std::string>& names = profile_components(profile.kind);
  for (const JsonReader& unit : root.at("units").elements()) {
    UnitProfile& entry = profile.units.emplace_back();
    entry.unit.layer = static_cast<int>(unit.at("layer").as_integer(0, std::numeric_limits<int>::max()));
    const JsonReader head = unit.at("head");
    entry.unit.head = head.value().is_null() ? -1 : static_cast<int>(head.as_integer(0, 1 << 20));
    const std::string role = unit.at("role").as_string();
    if (role != "key" && role != "value") unit.at("role").fail("'{}' is not key or value", role);
    entry.unit.role = role == "key" ? Role::key : Role::value;
    entry.values = unit.at("values").as_unsigned();
    const std::vector<JsonReader> candidates = unit.at("candidates").elements();
    if (candidates.size() != profile.candidates.size()) unit.at("candidates").fail("one entry per candidate expected");
    for (const JsonReader& candidate : candidates) {
      UnitMeasurement& measured = entry.candidates.emplace_back();
      measured.bytes = candidate.at("bytes").as_unsigned();
      const JsonReader components = candidate.at("components");
      for (const std::string& name : names) {
        std::vector<double>& per_seed = measured.components.emplace_back();
        for (const JsonReader& value : components.at(name).elements()) per_seed.push_back(value.as_number());
        if (per_seed.size() != profile.seeds.size()) components.at(name).fail("one value per seed expected");
      }
    }
  }
  return profile;
}

}  // namespace tqlab
