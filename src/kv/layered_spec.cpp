#include "kv/layered_spec.h"

#include <set>

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

}  // namespace tqlab
