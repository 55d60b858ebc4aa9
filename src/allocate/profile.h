// A sensitivity profile: for every unit (allocate/allocation_units.h) and every candidate spec,
// what quantizing that unit alone with that candidate does, all else exact, per seed.
//
// Two kinds, measured by allocate/offline_profile.h and allocate/model_profile.h:
//   offline  on a KV dump, per layer with exact inputs (it ignores how an error propagates to
//            later layers). Components, per seed, each the unit's share of the metric a sweep
//            reports for a run (the unit's sums over the run's whole count, so that the shares of
//            disjoint units add up to the run's value; docs/SWEEP.md#metrics):
//              attn_kl           KL(P || P~) of the queries reading the unit's keys (0 for values)
//              attn_out_rel_err  |P~V~ - PV| / |PV| of those queries, with only the unit quantized:
//                                through P~ for keys, through V~ for values
//              rel_mse           |x - x~|^2 over the role's whole energy (k_rel_mse, v_rel_mse)
//   model    end to end through the model (prefill, teacher forced, on the config's tokens): per
//            seed, the run's e2e_kld and e2e_ln_ppl_ratio (metrics/next_token_metrics.h) with only
//            the unit quantized.
// bytes are the packed bytes of the unit's values under the candidate, summed over every
// sequence (or chunk) and head the unit holds; they do not depend on the seed. Sum of bytes x 8
// over sum of values is the bits per value of any mix of candidates, exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "allocate/allocation_units.h"

namespace tqlab {

enum class ProfileKind { offline, model };

/// "offline", "model".
const char* profile_kind_name(ProfileKind kind);
std::optional<ProfileKind> parse_profile_kind(std::string_view name);

/// The component names of a profile kind, in the order the profile stores them.
const std::vector<std::string>& profile_components(ProfileKind kind);

/// One candidate on one unit.
struct UnitMeasurement {
  std::uint64_t bytes = 0;
  std::vector<std::vector<double>> components;  ///< [component][seed], profile_components() order

  /// The seed mean of component `index`.
  double mean(std::size_t index) const;
};

struct UnitProfile {
  AllocationUnit unit;
  std::uint64_t values = 0;                 ///< values the unit holds (every sequence or chunk)
  std::vector<UnitMeasurement> candidates;  ///< in Profile::candidates order
};

struct Profile {
  ProfileKind kind = ProfileKind::offline;
  Granularity granularity = Granularity::layer_head;
  std::vector<std::string> candidates;  ///< canonical specs
  std::vector<std::uint64_t> seeds;
  std::vector<int> layers;  ///< layer numbers, in order
  std::vector<UnitProfile> units;
  /// Whose numerics a model profile's passes ran a unit's cache in: "tqlab" (tqlab's quantizer of the
  /// candidate, tqlab's attention), or an engine's canonical spelling ("llama.cpp", "llama.cpp:rot=off":
  /// the unit's layer under the engine's own cache and attention, allocate/model_profile.h).
  std::string numerics = "tqlab";
  std::string content_key;  ///< sha256 (hex) of what it was measured from (allocate/profile_cache.h)
  std::string source;       ///< what it was measured on, as compact JSON (allocate/profile_cache.h)
  double seconds = 0;       ///< wall time of the measurement
  /// model: layers each unit's runs computed, over what runs from layer 0 would compute (the prefix saved).
  std::optional<double> layers_computed_share;

  /// Total values over every unit.
  std::uint64_t total_values() const;
  /// Bytes of the units under `choice` (a candidate index per unit).
  std::uint64_t bytes_of(const std::vector<int>& choice) const;
  /// 8 x bytes_of(choice) / total_values().
  double bits_of(const std::vector<int>& choice) const;
  /// Index of component `name` in profile_components(kind); InternalError when it has none.
  std::size_t component_index(std::string_view name) const;
};

/// The profile at layer granularity from one at layer-head granularity: each (layer, role)
/// unit's bytes, values and components the sums over its heads. Exact for the offline profile
/// (every component is a sum over the queries or vectors of one head); a model profile is not
/// additive over heads and must be measured at the granularity it is solved at (InternalError).
Profile profile_by_layer(const Profile& by_head);

}  // namespace tqlab
