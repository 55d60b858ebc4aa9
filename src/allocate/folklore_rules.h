// The layer rules users apply by hand, as plans over the profile's candidates at a budget, keys
// and values (and every head) of a layer alike:
//
//   vLLM's boundary rule   the first and last min(2, L / 2) layers at fp16, every other layer at one
//                          type: what vLLM's TurboQuant presets do (get_boundary_skip_layers keeps
//                          those layers at the model's dtype; quant/vllm_presets.h).
//   ik_llama.cpp's ends rule  "4-bit to the bottom ~15% and top ~10% of layers and 3-bit to the rest":
//                          the claim (a comment on ik_llama.cpp issue #1509, 2026-04-07) that
//                          ik_llama.cpp PR #1599 ("Mixed KV cache", -ctk-first/-ctk-last) was written
//                          to test. Read as: the first N = max(1, round(0.15 L)) and the last
//                          M = max(1, round(0.10 L)) layers ("bottom" is the input end) at a dearer
//                          type, the other layers at a base type.
//
// Neither rule says which types at a given budget, so each takes the plan of its shape with the most
// bytes within the budget — its bits as close to the budget as the candidates allow: vLLM's rule
// over the middle layers' type; the ends rule over every pair (base, ends) of candidates whose
// ends' uniform bytes exceed the base's (ties: the dearer base). When no plan fits, the cheapest is
// returned, marked as not fitting (vLLM's rule keeps every layer of a 4-layer model at 16 bits).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "allocate/profile.h"

namespace tqlab {

struct RulePlan {
  std::string name;         ///< as a user knows it, the types in the engine's names
  std::vector<int> choice;  ///< the candidate of every unit
  bool fits = true;         ///< false: the rule's cheapest plan, over the budget
};

/// Layers the ends rule raises at the input end (first) and at the output end (last) of `layers`.
int ends_rule_first_layers(int layers);
int ends_rule_last_layers(int layers);

/// vLLM's boundary rule within `capacity` bytes; nullopt without an "fp16" candidate. `names`: the
/// name of each candidate in the row's name (the engine's type names).
std::optional<RulePlan> vllm_boundary_rule(const Profile& profile, std::uint64_t capacity,
                                           const std::vector<std::string>& names);

/// ik_llama.cpp's ends rule within `capacity` bytes; nullopt with fewer than two distinct costs.
std::optional<RulePlan> ends_rule(const Profile& profile, std::uint64_t capacity,
                                  const std::vector<std::string>& names);

}  // namespace tqlab
