#include "allocate/offline_profile.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "allocate/profile_work.h"
#include "core/error.h"
#include "core/index.h"
#include "sweep/sweep.h"

namespace tqlab {
namespace {

LayeredSpec uniform_spec(const std::string& spec, const std::string& key_path) {
  LayeredSpec layered;
  layered.default_spec = spec;
  layered.key_path = key_path;
  return layered;
}

// Sums of one (run, seed) over the whole dump: the denominators every unit's share is taken over.
struct RunCounts {
  double kl = 0, out_err = 0, key_energy = 0, value_energy = 0;
};

// The sweep of the runs this profile (or its shard) holds: two runs per candidate, its keys with exact
// values and its values with exact keys (one run when it is exact); a shard measures the runs it holds
// (allocate/profile_work.h). Per candidate, key_run and value_run are its runs' index in the sweep, -1
// when not held.
struct OfflineSweep {
  SweepConfig sweep;
  std::vector<int> key_run, value_run;
};

OfflineSweep offline_sweep(const SweepConfig& config, const OfflineProfileOptions& options) {
  OfflineSweep out{config, {}, {}};
  SweepConfig& sweep = out.sweep;
  std::vector<int>& key_run = out.key_run;
  std::vector<int>& value_run = out.value_run;
  const OfflineRuns all_runs = offline_profile_runs(options.candidates);
  std::vector<int> held_index(all_runs.runs.size(), -1);
  sweep.runs.clear();
  for (std::size_t r = 0; r < all_runs.runs.size(); ++r) {
    if (options.runs &&
        std::find(options.runs->begin(), options.runs->end(), static_cast<int>(r)) == options.runs->end()) {
      continue;
    }
    const auto& [k, v] = all_runs.runs[r];
    held_index[r] = static_cast<int>(sweep.runs.size());
    sweep.runs.push_back({uniform_spec(k, "--candidates"), uniform_spec(v, "--candidates"), 0, 0,
                          k == kOfflineExactSpec ? fmt::format("values at {}", v) : fmt::format("keys at {}", k), "",
                          std::nullopt});
  }
  for (std::size_t c = 0; c < options.candidates.size(); ++c) {
    key_run.push_back(at(held_index, at(all_runs.key_run, c)));
    value_run.push_back(at(held_index, at(all_runs.value_run, c)));
  }
  return out;
}

// The profile's units (one per (layer, kv head, role)), every candidate's components zero.
Profile empty_offline_profile(const KvDump& dump, const OfflineProfileOptions& options,
                              const std::vector<std::uint64_t>& seed_list, std::vector<LayerHeads>& layers) {
  Profile profile;
  profile.kind = ProfileKind::offline;
  profile.granularity = Granularity::layer_head;
  profile.candidates = options.candidates;
  profile.seeds = seed_list;
  for (const KvLayerShape& shape : dump.layers()) {
    layers.push_back({shape.layer, shape.kv_heads});
    profile.layers.push_back(shape.layer);
  }
  const std::vector<AllocationUnit> units = allocation_units(layers, Granularity::layer_head);
  const std::size_t seeds = seed_list.size();
  const std::size_t components = profile_components(ProfileKind::offline).size();
  for (const AllocationUnit& unit : units) {
    UnitProfile& entry = profile.units.emplace_back();
    entry.unit = unit;
    entry.candidates.resize(options.candidates.size());
    for (UnitMeasurement& measurement : entry.candidates) {
      measurement.components.assign(components, std::vector<double>(seeds, 0.0));
    }
  }
  return profile;
}

// Per (run, seed): the denominators of the whole sweep's KL, output error and key and value energy.
std::vector<RunCounts> offline_run_counts(const SweepTotals& totals, const SweepItems& items,
                                          const RunSeeds& run_seeds) {
  std::vector<RunCounts> counts(static_cast<std::size_t>(run_seeds.count()));
  for (int i = 0; i < items.count(); ++i) {
    const ItemTotals& item_totals = at(totals.items, i);
    for (int rs = 0; rs < static_cast<int>(item_totals.run_seeds.size()); ++rs) {
      const ItemRunSeedTotals& t = at(item_totals.run_seeds, rs);
      RunCounts& count = at(counts, rs);
      count.key_energy += t.reconstruction[kKeyRelMse].denominator;
      count.value_energy += t.reconstruction[kValueRelMse].denominator;
      for (const AttentionSums& sums : t.attention) {
        count.kl += sums[kKl].denominator;
        count.out_err += sums[kOutErr].denominator;
      }
    }
  }
  return counts;
}

// Unit index of (layer index, kv head, role) in a layer_head profile of `layers`: keys then values per head.
class OfflineUnitIndex {
 public:
  explicit OfflineUnitIndex(const std::vector<LayerHeads>& layers) {
    int next = 0;
    for (const LayerHeads& layer : layers) {
      first_unit_.push_back(next);
      next += 2 * layer.kv_heads;
    }
  }
  std::size_t operator()(int layer_index, int head, Role role) const {
    return static_cast<std::size_t>(at(first_unit_, layer_index) + 2 * head + (role == Role::key ? 0 : 1));
  }

 private:
  std::vector<int> first_unit_;
};

// Adds one work item's shares of `run` (one candidate's run of `role`) to the candidate's measurement of
// the item's unit, per seed: its attention KL, output error and role's reconstruction error, each over
// the whole run's; on seed 0 its packed bytes and, when `count_values`, the unit's values.
void add_item_shares(const ItemTotals& item_totals, const RunSeeds& run_seeds, int run,
                     const std::vector<RunCounts>& counts, Role role, bool count_values, UnitProfile& entry,
                     UnitMeasurement& measurement) {
  const bool keys = role == Role::key;
  for (int s = 0; s < run_seeds.seeds; ++s) {
    const int rs = run_seeds.index(run, s);
    const ItemRunSeedTotals& t = at(item_totals.run_seeds, rs);
    const RunCounts& count = at(counts, rs);
    double kl = 0, out_err = 0;
    for (const AttentionSums& sums : t.attention) {
      kl += sums[kKl].numerator;
      out_err += sums[kOutErr].numerator;
    }
    const RatioSum& error = t.reconstruction[keys ? kKeyRelMse : kValueRelMse];
    const auto seed = static_cast<std::size_t>(s);
    measurement.components[0][seed] += count.kl > 0 ? kl / count.kl : 0.0;
    measurement.components[1][seed] += count.out_err > 0 ? out_err / count.out_err : 0.0;
    const double energy = keys ? count.key_energy : count.value_energy;
    measurement.components[2][seed] += energy > 0 ? error.numerator / energy : 0.0;
    if (s == 0) {
      // Packed bits counted by the sweep: 8 x bytes, exact in a double.
      measurement.bytes += static_cast<std::uint64_t>((keys ? t.key_bits : t.value_bits) / 8);
      if (count_values) entry.values += static_cast<std::uint64_t>(keys ? t.key_values : t.value_values);
    }
  }
}

// The index of the first candidate whose run of a role is measured (a unit's values are counted from it).
std::size_t first_held(const std::vector<int>& role_runs) {
  const auto found = std::find_if(role_runs.begin(), role_runs.end(), [](int run) { return run >= 0; });
  return static_cast<std::size_t>(found - role_runs.begin());
}

}  // namespace

Profile measure_offline_profile(const SweepConfig& config, const OfflineProfileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (!config.metrics.attention) {
    fail("config '{}': the offline profile measures attention, which metrics.attention switches off",
         config.config_path);
  }
  const OfflineSweep held = offline_sweep(config, options);
  SweepConfig sweep = held.sweep;
  const bool any_run = !sweep.runs.empty();
  sweep.metrics.reconstruction = true;
  sweep.metrics.needle = false;
  sweep.metrics.per_head = false;
  SweepPlan plan = plan_sweep(std::move(sweep), PlanOptions{options.threads});
  if (!plan.attention) {
    fail("config '{}': the offline profile needs queries, and '{}' has none", config.config_path,
         plan.generated_data ? std::string("the model's dump") : config.data.path);
  }
  plan.model.reset();  // the dump is made: no end-to-end passes here
  const KvDump& dump = *plan.dump;
  SweepOptions sweep_options;
  sweep_options.threads = options.threads;
  if (!any_run) sweep_options.units = std::vector<int>{};  // an empty shard: the dump's shape only
  if (options.on_progress) {
    sweep_options.on_progress = [&](std::size_t done, std::size_t total, int) { options.on_progress(done, total); };
  }
  SweepTiming timing;
  const SweepTotals totals = compute_sweep_totals(plan, sweep_options, timing);

  std::vector<LayerHeads> layers;
  Profile profile = empty_offline_profile(dump, options, plan.config.seeds, layers);
  const RunSeeds run_seeds{static_cast<int>(plan.runs.size()), static_cast<int>(plan.config.seeds.size())};
  const OfflineUnitIndex unit_of(layers);
  const SweepItems items(dump);
  const std::vector<RunCounts> counts = offline_run_counts(totals, items, run_seeds);
  const std::size_t first_key = first_held(held.key_run), first_value = first_held(held.value_run);
  for (int i = 0; i < items.count(); ++i) {
    const WorkItem item = items.item(i);
    const ItemTotals& item_totals = at(totals.items, i);
    if (item_totals.run_seeds.empty()) continue;  // every token skipped (nonfinite: skip), or not computed
    for (std::size_t c = 0; c < options.candidates.size(); ++c) {
      for (Role role : {Role::key, Role::value}) {
        const bool keys = role == Role::key;
        const int run = keys ? at(held.key_run, c) : at(held.value_run, c);
        if (run < 0) continue;
        UnitProfile& entry = profile.units[unit_of(item.layer_index, item.kv_head, role)];
        add_item_shares(item_totals, run_seeds, run, counts, role, c == (keys ? first_key : first_value), entry,
                        entry.candidates[c]);
      }
    }
  }
  profile.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return profile;
}

namespace {

// The shapes of the config's data file's selected layers, from its headers.
std::vector<KvLayerShape> data_layer_shapes(const SweepConfig& config) {
  const std::unique_ptr<TensorFile> file = TensorFile::open(config.data.resolved_path);
  KvDumpSpec kv = config.data.kv;
  kv.layout = resolve_kv_layout(*file, kv.layout, "data.layout").layout;
  const KvDump dump(*file, kv);
  return dump.layers();
}

}  // namespace

std::vector<LayerHeads> data_layer_heads(const SweepConfig& config) {
  std::vector<LayerHeads> layers;
  for (const KvLayerShape& shape : data_layer_shapes(config)) layers.push_back({shape.layer, shape.kv_heads});
  return layers;
}

std::vector<int> data_head_dims(const SweepConfig& config) {
  std::vector<int> dims;
  for (const KvLayerShape& shape : data_layer_shapes(config)) {
    for (int dim : {shape.key_dim, shape.value_dim}) {
      if (std::find(dims.begin(), dims.end(), dim) == dims.end()) dims.push_back(dim);
    }
  }
  return dims;
}

}  // namespace tqlab
