#include "quant/registry.h"

#include <fmt/ranges.h>

#include "core/error.h"
#include "core/text.h"

namespace tqlab {

// Each method family contributes its MethodInfo entries (defined beside its code).
std::vector<MethodInfo> float_methods();    // fp16, bf16, fp32, fp8_e4m3, fp8_e5m2
std::vector<MethodInfo> block_methods();    // q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl
std::vector<MethodInfo> kivi_methods();     // kivi
std::vector<MethodInfo> turbo_methods();    // tq

const std::vector<MethodInfo>& quantizer_methods() {
  static const std::vector<MethodInfo> all = [] {
    std::vector<MethodInfo> methods;
    for (auto family : {&float_methods, &block_methods, &kivi_methods, &turbo_methods}) {
      for (MethodInfo& info : family()) methods.push_back(std::move(info));
    }
    return methods;
  }();
  return all;
}

std::unique_ptr<Quantizer> make_quantizer(std::string_view spec) {
  const ParsedSpec parsed = split_spec(spec);
  std::vector<std::string_view> names;
  for (const MethodInfo& info : quantizer_methods()) {
    if (info.name == parsed.method) {
      SpecOptionReader reader(parsed);
      return info.make(reader);
    }
    names.push_back(info.name);
  }
  fail("quantizer spec '{}': unknown method '{}' (known: {})", parsed.text, printable(parsed.method),
       fmt::join(names, ", "));
}

}  // namespace tqlab
