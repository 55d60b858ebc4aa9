// The offline profile (allocate/profile.h): every candidate on every (layer, kv head, role) of a
// KV dump, with only that role quantized, by the ordinary sweep.
//
// Offline metrics of one head depend on that head's keys and values only, so quantizing every
// head's keys with a candidate at once measures each head as if it were quantized alone: per
// candidate c the sweep runs {k: c, v: fp32} and {k: fp32, v: c} once over the dump (2 runs per
// candidate, not 2 x units), and the runs' per-item totals (sweep/sweep_totals.h) are taken
// apart per (layer, kv head). Each component is the unit's sum over the whole run's count, so
// the units' shares add up to the run's metric exactly (attn_kl, rel_mse) or as the errors of
// disjoint heads add up (attn_out_rel_err of keys and values of one head together is not the
// sum). Needles are not measured. The profile is at layer-head granularity; profile_by_layer()
// gives the layer one exactly.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "allocate/profile.h"
#include "sweep/sweep_config.h"

namespace tqlab {

struct OfflineProfileOptions {
  std::vector<std::string> candidates;  ///< canonical specs
  int threads = 0;
  /// The work units (allocate/profile_work.h: runs) to measure; nullopt: every one. The cells of
  /// the others stay zero (their units' values too, when no run of the role is measured).
  std::optional<std::vector<int>> runs;
  /// After each work item of the sweep: (items done, items in all).
  std::function<void(std::size_t done, std::size_t total)> on_progress;
};

/// The sweep config's data (or, with a model block and no data, the model's own Q/K/V),
/// attention options and seeds; its runs are not used. InputError when the data has no queries,
/// the config switches attention off, or a candidate cannot take a layer's head dim.
Profile measure_offline_profile(const SweepConfig& config, const OfflineProfileOptions& options);

/// The key and value head dims of the config's data file (its selected layers), read from the
/// tensors' headers only: what candidates must take. InputError as a sweep gives it.
std::vector<int> data_head_dims(const SweepConfig& config);

/// The layers (and their kv heads) of the config's data file, its selected layers, from the headers
/// only: the layers an offline profile of it holds units of.
std::vector<LayerHeads> data_layer_heads(const SweepConfig& config);

}  // namespace tqlab
