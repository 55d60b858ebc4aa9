#include "allocate/allocation_units.h"

#include <fmt/format.h>

namespace tqlab {

const char* granularity_name(Granularity granularity) {
  return granularity == Granularity::layer ? "layer" : "layer-head";
}

std::optional<Granularity> parse_granularity(std::string_view name) {
  if (name == "layer") return Granularity::layer;
  if (name == "layer-head") return Granularity::layer_head;
  return std::nullopt;
}

std::string AllocationUnit::name() const {
  const char* letter = role == Role::key ? "K" : "V";
  return head < 0 ? fmt::format("L{}.{}", layer, letter) : fmt::format("L{}.h{}.{}", layer, head, letter);
}

std::vector<AllocationUnit> allocation_units(const std::vector<LayerHeads>& layers, Granularity granularity) {
  std::vector<AllocationUnit> units;
  for (const LayerHeads& layer : layers) {
    const int heads = granularity == Granularity::layer ? 1 : layer.kv_heads;
    for (int head = 0; head < heads; ++head) {
      for (Role role : {Role::key, Role::value}) {
        units.push_back({layer.layer, granularity == Granularity::layer ? -1 : head, role});
      }
    }
  }
  return units;
}

}  // namespace tqlab
