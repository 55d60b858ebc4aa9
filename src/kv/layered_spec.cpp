#include "kv/layered_spec.h"

#include <set>

#include <nlohmann/json.hpp>

namespace tqlab {

const std::string& LayeredSpec::spec_for(int layer, int head) const {
  if (const auto found = head_specs.find({layer, head}); found != head_specs.end()) return found->second;
  if (const auto found = layer_specs.find(layer); found != layer_specs.end()) return found->second;
  return default_spec;
}

std::vector<std::string> LayeredSpec::all_specs() const {
  std::set<std::string> specs{default_spec};
  for (const auto& [layer, spec] : layer_specs) specs.insert(spec);
  for (const auto& [where, spec] : head_specs) specs.insert(spec);
  return {specs.begin(), specs.end()};
}

nlohmann::ordered_json layered_spec_json(const LayeredSpec& spec,
                                         const std::function<std::string(const std::string&)>& name) {
  const auto named = [&](const std::string& text) { return name ? name(text) : text; };
  if (spec.is_uniform()) return named(spec.default_spec);
  std::map<int, nlohmann::ordered_json> by_layer;
  for (const auto& [layer, text] : spec.layer_specs) by_layer[layer] = named(text);
  for (const auto& [where, text] : spec.head_specs) {
    nlohmann::ordered_json& entry = by_layer[where.first];
    if (!entry.is_object()) {
      nlohmann::ordered_json object = nlohmann::ordered_json::object();
      if (entry.is_string()) object["default"] = entry;
      object["heads"] = nlohmann::ordered_json::object();
      entry = std::move(object);
    }
    entry["heads"][std::to_string(where.second)] = named(text);
  }
  nlohmann::ordered_json layers = nlohmann::ordered_json::object();
  for (auto& [layer, entry] : by_layer) layers[std::to_string(layer)] = std::move(entry);
  return nlohmann::ordered_json{{"default", named(spec.default_spec)}, {"layers", std::move(layers)}};
}

}  // namespace tqlab
