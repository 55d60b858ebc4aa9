#include "allocate/offline_profile.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/index.h"
#include "sweep/sweep.h"

namespace tqlab {
namespace {

constexpr const char* kExact = "fp32";

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

}  // namespace

Profile measure_offline_profile(const SweepConfig& config, const OfflineProfileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (!config.metrics.attention) {
    fail("config '{}': the offline profile measures attention, which metrics.attention switches off",
         config.config_path);
  }
  // Two runs per candidate: its keys with exact values, its values with exact keys (one run when it is exact).
  SweepConfig sweep = config;
  sweep.runs.clear();
  std::vector<int> key_run, value_run;  // per candidate: run index
  const auto add_run = [&](const std::string& k, const std::string& v, const std::string& origin) {
    for (std::size_t r = 0; r < sweep.runs.size(); ++r) {
      if (sweep.runs[r].k.default_spec == k && sweep.runs[r].v.default_spec == v) return static_cast<int>(r);
    }
    sweep.runs.push_back({uniform_spec(k, "--candidates"), uniform_spec(v, "--candidates"), 0, 0, origin});
    return static_cast<int>(sweep.runs.size()) - 1;
  };
  for (const std::string& candidate : options.candidates) {
    key_run.push_back(add_run(candidate, kExact, fmt::format("keys at {}", candidate)));
    value_run.push_back(add_run(kExact, candidate, fmt::format("values at {}", candidate)));
  }
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
  if (options.on_progress) {
    sweep_options.on_progress = [&](std::size_t done, std::size_t total, int) { options.on_progress(done, total); };
  }
  SweepTiming timing;
  const SweepTotals totals = compute_sweep_totals(plan, sweep_options, timing);

  Profile profile;
  profile.kind = ProfileKind::offline;
  profile.granularity = Granularity::layer_head;
  profile.candidates = options.candidates;
  profile.seeds = plan.config.seeds;
  std::vector<LayerHeads> layers;
  for (const KvLayerShape& shape : dump.layers()) {
    layers.push_back({shape.layer, shape.kv_heads});
    profile.layers.push_back(shape.layer);
  }
  const std::vector<AllocationUnit> units = allocation_units(layers, Granularity::layer_head);
  const std::size_t seeds = plan.config.seeds.size();
  const RunSeeds run_seeds{static_cast<int>(plan.runs.size()), static_cast<int>(seeds)};
  const std::size_t components = profile_components(ProfileKind::offline).size();
  for (const AllocationUnit& unit : units) {
    UnitProfile& entry = profile.units.emplace_back();
    entry.unit = unit;
    entry.candidates.resize(options.candidates.size());
    for (UnitMeasurement& measurement : entry.candidates) {
      measurement.components.assign(components, std::vector<double>(seeds, 0.0));
    }
  }
  // Unit index of (layer index, kv head, role).
  std::vector<int> first_unit;
  int next = 0;
  for (const LayerHeads& layer : layers) {
    first_unit.push_back(next);
    next += 2 * layer.kv_heads;
  }
  const auto unit_of = [&](int layer_index, int head, Role role) {
    return static_cast<std::size_t>(at(first_unit, layer_index) + 2 * head + (role == Role::key ? 0 : 1));
  };

  const SweepItems items(dump);
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
  for (int i = 0; i < items.count(); ++i) {
    const WorkItem item = items.item(i);
    const ItemTotals& item_totals = at(totals.items, i);
    if (item_totals.run_seeds.empty()) continue;  // every token skipped (nonfinite: skip)
    for (std::size_t c = 0; c < options.candidates.size(); ++c) {
      for (Role role : {Role::key, Role::value}) {
        const int run = role == Role::key ? at(key_run, c) : at(value_run, c);
        UnitProfile& entry = profile.units[unit_of(item.layer_index, item.kv_head, role)];
        UnitMeasurement& measurement = entry.candidates[c];
        for (std::size_t s = 0; s < seeds; ++s) {
          const int rs = run_seeds.index(run, static_cast<int>(s));
          const ItemRunSeedTotals& t = at(item_totals.run_seeds, rs);
          const RunCounts& count = at(counts, rs);
          double kl = 0, out_err = 0;
          for (const AttentionSums& sums : t.attention) {
            kl += sums[kKl].numerator;
            out_err += sums[kOutErr].numerator;
          }
          const bool keys = role == Role::key;
          const RatioSum& error = t.reconstruction[keys ? kKeyRelMse : kValueRelMse];
          measurement.components[0][s] += count.kl > 0 ? kl / count.kl : 0.0;
          measurement.components[1][s] += count.out_err > 0 ? out_err / count.out_err : 0.0;
          const double energy = keys ? count.key_energy : count.value_energy;
          measurement.components[2][s] += energy > 0 ? error.numerator / energy : 0.0;
          if (s == 0) {
            // Packed bits counted by the sweep: 8 x bytes, exact in a double.
            measurement.bytes += static_cast<std::uint64_t>((keys ? t.key_bits : t.value_bits) / 8);
            if (c == 0) entry.values += static_cast<std::uint64_t>(keys ? t.key_values : t.value_values);
          }
        }
      }
    }
  }
  profile.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return profile;
}

std::vector<int> data_head_dims(const SweepConfig& config) {
  const std::unique_ptr<TensorFile> file = TensorFile::open(config.data.resolved_path);
  KvDumpSpec kv = config.data.kv;
  kv.layout = resolve_kv_layout(*file, kv.layout, "data.layout").layout;
  const KvDump dump(*file, kv);
  std::vector<int> dims;
  for (const KvLayerShape& shape : dump.layers()) {
    for (int dim : {shape.key_dim, shape.value_dim}) {
      if (std::find(dims.begin(), dims.end(), dim) == dims.end()) dims.push_back(dim);
    }
  }
  return dims;
}

}  // namespace tqlab
