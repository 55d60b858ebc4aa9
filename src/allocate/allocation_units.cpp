#include "allocate/allocation_units.h"

#include <fmt/format.h>

#include "core/name_table.h"

namespace tqlab {

namespace {

constexpr auto kGranularityNames =
    make_name_table<Granularity>({{Granularity::layer, "layer"}, {Granularity::layer_head, "layer-head"}});

}  // namespace

const char* granularity_name(Granularity granularity) { return kGranularityNames.name(granularity).data(); }

std::optional<Granularity> parse_granularity(std::string_view name) { return kGranularityNames.parse(name); }

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
