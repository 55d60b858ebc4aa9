#include "allocate/folklore_rules.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "allocate/heuristics.h"
#include "quant/vllm_presets.h"

namespace tqlab {
namespace {

// The choice giving layer position i (profile.layers order) candidate per_layer[i], every unit of it alike.
std::vector<int> layer_choice(const Profile& profile, const std::vector<int>& per_layer) {
  std::map<int, std::size_t> position;
  for (std::size_t i = 0; i < profile.layers.size(); ++i) position[profile.layers[i]] = i;
  std::vector<int> choice;
  for (const UnitProfile& unit : profile.units) choice.push_back(per_layer[position.at(unit.unit.layer)]);
  return choice;
}

// Of `plans` (per-layer candidates), the one of the most bytes within `capacity` (ties: the later),
// else the cheapest marked as not fitting.
std::optional<std::pair<std::size_t, bool>> fullest(const Profile& profile, const std::vector<std::vector<int>>& plans,
                                                    std::uint64_t capacity) {
  std::optional<std::size_t> best, cheapest;
  std::uint64_t best_bytes = 0, cheapest_bytes = 0;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const std::uint64_t bytes = profile.bytes_of(layer_choice(profile, plans[i]));
    if (!cheapest || bytes < cheapest_bytes) cheapest = i, cheapest_bytes = bytes;
    if (bytes <= capacity && (!best || bytes >= best_bytes)) best = i, best_bytes = bytes;
  }
  if (best) return std::make_pair(*best, true);
  if (cheapest) return std::make_pair(*cheapest, false);
  return std::nullopt;
}

std::string layer_span(int from, int to) {
  return from == to ? fmt::format("{}", from) : fmt::format("{}-{}", from, to);
}

}  // namespace

int ends_rule_first_layers(int layers) {
  return std::min(layers, std::max(1, static_cast<int>(std::lround(0.15 * layers))));
}

int ends_rule_last_layers(int layers) {
  return std::min(layers - ends_rule_first_layers(layers), std::max(1, static_cast<int>(std::lround(0.10 * layers))));
}

std::optional<RulePlan> vllm_boundary_rule(const Profile& profile, std::uint64_t capacity,
                                           const std::vector<std::string>& names) {
  const auto found = std::find(profile.candidates.begin(), profile.candidates.end(), "fp16");
  if (found == profile.candidates.end()) return std::nullopt;
  const int unquantized = static_cast<int>(found - profile.candidates.begin());
  const int layers = static_cast<int>(profile.layers.size());
  const int edge = std::min(kVllmBoundaryLayers, layers / 2);
  std::vector<std::vector<int>> plans;
  const std::vector<int> ladder = ladder_order(profile);
  for (const int middle : ladder) {
    std::vector<int> per_layer(static_cast<std::size_t>(layers), middle);
    for (int i = 0; i < layers; ++i) {
      if (i < edge || i >= layers - edge) per_layer[static_cast<std::size_t>(i)] = unquantized;
    }
    plans.push_back(std::move(per_layer));
  }
  const auto chosen = fullest(profile, plans, capacity);
  if (!chosen) return std::nullopt;
  const std::vector<int>& per_layer = plans[chosen->first];
  const auto name = [&](int candidate) { return names[static_cast<std::size_t>(candidate)]; };
  const auto at = [&](int i) { return profile.layers[static_cast<std::size_t>(i)]; };
  std::string text = fmt::format("every layer {}", name(unquantized));
  if (2 * edge < layers) {
    text = fmt::format("layers {} and {} {}, the rest {}", layer_span(at(0), at(edge - 1)),
                       layer_span(at(layers - edge), at(layers - 1)), name(unquantized), name(ladder[chosen->first]));
    if (edge == 0) text = fmt::format("every layer {}", name(ladder[chosen->first]));
  }
  return RulePlan{"vLLM's boundary rule (" + text + ")", layer_choice(profile, per_layer), chosen->second};
}

std::optional<RulePlan> ends_rule(const Profile& profile, std::uint64_t capacity,
                                  const std::vector<std::string>& names) {
  const int layers = static_cast<int>(profile.layers.size());
  const int first = ends_rule_first_layers(layers), last = ends_rule_last_layers(layers);
  const std::vector<int> ladder = ladder_order(profile);
  std::vector<std::uint64_t> uniform_bytes;
  for (const int candidate : ladder) uniform_bytes.push_back(profile.bytes_of(uniform_choice(profile, candidate)));
  std::vector<std::vector<int>> plans;
  std::vector<std::pair<int, int>> types;  // (base, ends) of each plan
  for (std::size_t base = 0; base < ladder.size(); ++base) {
    for (std::size_t ends = 0; ends < ladder.size(); ++ends) {
      if (uniform_bytes[ends] <= uniform_bytes[base]) continue;
      std::vector<int> per_layer(static_cast<std::size_t>(layers), ladder[base]);
      for (int i = 0; i < layers; ++i) {
        if (i < first || i >= layers - last) per_layer[static_cast<std::size_t>(i)] = ladder[ends];
      }
      plans.push_back(std::move(per_layer));
      types.emplace_back(ladder[base], ladder[ends]);
    }
  }
  const auto chosen = fullest(profile, plans, capacity);
  if (!chosen) return std::nullopt;
  const auto [base, ends] = types[chosen->first];
  return RulePlan{fmt::format("ik_llama.cpp's 15%/10% rule (first {} and last {} layers {}, the rest {})", first, last,
                              names[static_cast<std::size_t>(ends)], names[static_cast<std::size_t>(base)]),
                  layer_choice(profile, plans[chosen->first]), chosen->second};
}

}  // namespace tqlab
