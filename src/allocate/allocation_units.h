// The units an allocation gives bits to.
//
// A unit is the keys or the values (its role) of one layer, or of one kv head of one layer:
// every value it holds is quantized by the one candidate spec the allocation chooses for it.
// Units are numbered layer first (in the order the data or the model lists its layers), then
// kv head, then role, keys before values:
//   granularity layer:       L0.K, L0.V, L1.K, L1.V, ...
//   granularity layer-head:  L0.h0.K, L0.h0.V, L0.h1.K, L0.h1.V, L1.h0.K, ...
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/quantizer.h"

namespace tqlab {

enum class Granularity { layer, layer_head };

/// "layer", "layer-head".
const char* granularity_name(Granularity granularity);
std::optional<Granularity> parse_granularity(std::string_view name);

struct AllocationUnit {
  int layer = 0;          ///< the layer's number (as the data's tensor names or the model number it)
  int head = -1;          ///< kv head; -1: every kv head of the layer
  Role role = Role::key;  ///< key or value

  /// "L3.K", "L3.h1.V".
  std::string name() const;
  /// Whether the unit holds kv head `kv_head` of its layer.
  bool holds_head(int kv_head) const { return head < 0 || head == kv_head; }
};

/// A layer as units see it: its number and its kv heads.
struct LayerHeads {
  int layer = 0;
  int kv_heads = 0;
};

/// Every unit of `layers` at `granularity`, in the order above.
std::vector<AllocationUnit> allocation_units(const std::vector<LayerHeads>& layers, Granularity granularity);

}  // namespace tqlab
