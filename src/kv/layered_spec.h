// The quantizer specs of a KV cache's K or V: one spec for every (layer, kv head), or a
// default with per-layer and per-head exceptions, as a sweep config or a run's allocation
// writes them (docs/SWEEP.md#config):
//   "tq:b=3"  or  {"default": "tq:b=3", "layers": {"0": "tq:b=5", "1": {"default": ..., "heads": {"0": ...}}}}
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tqlab {

/// A quantizer spec for K or V of a run: one spec, or one per layer and head.
struct LayeredSpec {
  std::string default_spec;                          ///< as written
  std::map<int, std::string> layer_specs;            ///< layer number -> spec for its heads
  std::map<std::pair<int, int>, std::string> head_specs;  ///< (layer, head) -> spec
  std::string key_path;                              ///< where it was written, e.g. "grid.k[2]"

  /// The spec for (layer number, kv head): the head's, else the layer's, else the default.
  const std::string& spec_for(int layer, int head) const;
  bool is_uniform() const { return layer_specs.empty() && head_specs.empty(); }
  /// Every distinct spec string it names.
  std::vector<std::string> all_specs() const;
};

/// The spec as a sweep config writes it: the default's string when uniform, else
/// {"default": spec, "layers": {"L": spec | {"default": spec, "heads": {"H": spec}}}} (layers and
/// heads ascending, "default" of a layer only when it has a layer spec), every spec through
/// `name` (e.g. made canonical for a head dim).
nlohmann::ordered_json layered_spec_json(
    const LayeredSpec& spec, const std::function<std::string(const std::string&)>& name = nullptr);

}  // namespace tqlab
