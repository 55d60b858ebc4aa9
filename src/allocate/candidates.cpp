#include "allocate/candidates.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

bool starts_a_spec(std::string_view part) {
  if (part.find(':') != std::string_view::npos) return true;
  const std::vector<MethodInfo>& methods = quantizer_methods();
  return std::any_of(methods.begin(), methods.end(), [&](const MethodInfo& method) { return method.name == part; });
}

}  // namespace

std::vector<std::string> default_candidates() {
  std::vector<std::string> specs;
  for (int bits = 2; bits <= 8; ++bits) specs.push_back(fmt::format("tq:b={},nc", bits));
  specs.emplace_back("fp16");
  return specs;
}

std::vector<std::string> split_candidate_list(std::string_view text, std::string_view option) {
  std::vector<std::string> specs;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view part = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (part.empty()) fail("{}: '{}' has an empty spec (two commas in a row, or one at an end)", option, text);
    if (specs.empty() || starts_a_spec(part)) {
      specs.emplace_back(part);
    } else {
      specs.back().push_back(',');
      specs.back().append(part);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return specs;
}

std::vector<std::string> canonical_candidates(const std::vector<std::string>& specs, const std::vector<int>& dims,
                                              std::string_view option) {
  std::vector<std::string> canonical;
  for (const std::string& spec : specs) {
    std::unique_ptr<Quantizer> quantizer;
    try {
      quantizer = make_quantizer(spec);
    } catch (const InputError& error) {
      fail("{}: {}", option, error.what());
    }
    for (int dim : dims) {
      try {
        quantizer->check_dim(dim);
      } catch (const InputError& error) {
        fail("{}: '{}' cannot take the head dim {}: {}", option, spec, dim, error.what());
      }
    }
    std::string name = dims.size() == 1 ? quantizer->spec_for_dim(dims.front()) : quantizer->spec();
    const auto same = std::find(canonical.begin(), canonical.end(), name);
    if (same != canonical.end()) {
      fail("{}: '{}' and '{}' are the same configuration ({}); list each candidate once", option,
           specs[static_cast<std::size_t>(same - canonical.begin())], spec, name);
    }
    canonical.push_back(std::move(name));
  }
  return canonical;
}

}  // namespace tqlab
