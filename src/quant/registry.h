// The registry of quantizer methods: what `tqlab list` prints, what spec
// strings resolve to, and what the property tests loop over (a new method
// registered here is tested for free).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quant/quantizer.h"
#include "quant/spec.h"

namespace tqlab {

struct MethodInfo {
  std::string name;          ///< "tq", "q4_0"
  std::string summary;       ///< one line
  std::vector<OptionDoc> options;
  std::string bits_formula;  ///< bits per value, e.g. "b + 16/block"
  /// Specs the property tests run (one per distinct code path worth testing).
  std::vector<std::string> example_specs;
  /// Builds a quantizer from a split spec; validates every option.
  std::function<std::unique_ptr<Quantizer>(SpecOptionReader&)> make;
};

/// Every registered method, in `tqlab list` order.
const std::vector<MethodInfo>& quantizer_methods();

/// Parses and validates `spec`; InputError names the spec and the allowed values.
std::unique_ptr<Quantizer> make_quantizer(std::string_view spec);

}  // namespace tqlab
