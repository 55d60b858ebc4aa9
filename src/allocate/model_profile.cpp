#include "allocate/model_profile.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <optional>

#include "core/error.h"
#include "engine/engine.h"
#include "metrics/next_token_metrics.h"
#include "quant/registry.h"
#include "sweep/sweep_model.h"

namespace tqlab {
namespace {

double metric_value(const NextTokenSeries& series, const std::string& name) {
  for (const auto& [metric, value] : next_token_metrics(series)) {
    if (metric == name) return value.value;
  }
  throw InternalError("next_token_metrics has no " + name);
}

// Which passes this process measures: every one, or options.passes (a shard's work units).
std::vector<bool> held_passes_of(std::size_t all_passes, const ModelProfileOptions& options) {
  std::vector<bool> held(all_passes, !options.passes);
  if (options.passes) {
    for (int work : *options.passes) held.at(static_cast<std::size_t>(work)) = true;
  }
  return held;
}

// The cache of one pass: every head exact but the unit's heads of its role and layer, at `quantizer`.
KvCacheQuantization unit_cache(const ModelConfig& shape, const AllocationUnit& unit, const Quantizer& exact,
                               const Quantizer& quantizer, const ExactTokens& exact_tokens, std::uint64_t seed) {
  const auto heads = static_cast<std::size_t>(shape.kv_heads);
  KvCacheQuantization cache;
  cache.key.assign(static_cast<std::size_t>(shape.layers), std::vector<const Quantizer*>(heads, &exact));
  cache.value = cache.key;
  auto& role_table = (unit.role == Role::key ? cache.key : cache.value)[static_cast<std::size_t>(unit.layer)];
  for (std::size_t head = 0; head < heads; ++head) {
    if (unit.holds_head(static_cast<int>(head))) role_table[head] = &quantizer;
  }
  cache.exact = exact_tokens;
  cache.seed = seed;
  return cache;
}

// Each candidate's engine caches in the engine's numerics, the unit's role at the candidate's type and
// the other at the engine's f32: [candidate][role]; empty in tqlab's.
std::vector<std::array<std::unique_ptr<EngineCache>, 2>> engine_caches(const ModelProfileOptions& options,
                                                                       int head_dim) {
  std::vector<std::array<std::unique_ptr<EngineCache>, 2>> caches;
  if (is_default_engine(options.numerics)) return caches;
  const std::unique_ptr<Engine> engine = parse_engine(options.numerics, "numerics");
  const std::string exact = engine_cache_type(*engine, "fp32");
  for (const std::string& candidate : options.candidates) {
    const std::string type = engine_cache_type(*engine, candidate);
    if (type.empty() || exact.empty()) {
      throw InternalError("model profile: engine " + options.numerics + " has no cache type for " +
                          (type.empty() ? candidate : std::string("fp32")));
    }
    auto& roles = caches.emplace_back();
    roles[0] = engine->bind(type, exact, head_dim);
    roles[1] = engine->bind(exact, type, head_dim);
    if (roles[0] == nullptr || roles[1] == nullptr) {
      throw InternalError("model profile: engine " + options.numerics + " has no attention of its own");
    }
  }
  return caches;
}

// `cache` with the unit's layer (its heads, per head) under `engine` instead of its quantizers.
void put_under_engine(KvCacheQuantization& cache, const ModelConfig& shape, const AllocationUnit& unit,
                      const EngineCache& engine) {
  const auto layer = static_cast<std::size_t>(unit.layer);
  cache.engine.assign(static_cast<std::size_t>(shape.layers), nullptr);
  cache.engine[layer] = &engine;
  if (unit.head < 0) return;
  cache.engine_heads.assign(static_cast<std::size_t>(shape.layers), {});
  cache.engine_heads[layer].assign(static_cast<std::size_t>(shape.kv_heads), false);
  cache.engine_heads[layer][static_cast<std::size_t>(unit.head)] = true;
}

// The bytes the unit's heads took in a pass's cache.
std::uint64_t unit_bytes(const RunSeedResult& result, const AllocationUnit& unit, int kv_heads) {
  const auto& per_head = (unit.role == Role::key ? result.bytes.key_head : result.bytes.value_head);
  std::uint64_t bytes = 0;
  for (int head = 0; head < kv_heads; ++head) {
    if (unit.holds_head(head)) {
      bytes += per_head.at(static_cast<std::size_t>(unit.layer)).at(static_cast<std::size_t>(head));
    }
  }
  return bytes;
}

}  // namespace

Profile measure_model_profile(const SweepConfig& config, const SweepModel& model, const ModelProfileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const ModelConfig& shape = model.transformer->config();
  const std::unique_ptr<Quantizer> exact = make_quantizer("fp32");
  std::vector<std::unique_ptr<Quantizer>> quantizers;
  for (const std::string& spec : options.candidates) {
    quantizers.push_back(make_quantizer(spec));
    quantizers.back()->check_dim(shape.head_dim);  // canonical_candidates checked it: an internal slip if not
  }
  Profile profile;
  profile.kind = ProfileKind::model;
  profile.granularity = options.granularity;
  profile.candidates = options.candidates;
  profile.numerics = options.numerics;
  profile.seeds = config.seeds;
  const auto engines = engine_caches(options, shape.head_dim);
  std::vector<LayerHeads> layers;
  for (int layer = 0; layer < shape.layers; ++layer) {
    layers.push_back({layer, shape.kv_heads});
    profile.layers.push_back(layer);
  }
  const std::vector<AllocationUnit> units = allocation_units(layers, options.granularity);

  // Pass p is work unit p (allocate/profile_work.h): units outer, candidates, seeds inner.
  const std::vector<bool> held =
      held_passes_of(units.size() * options.candidates.size() * config.seeds.size(), options);
  const auto held_passes = static_cast<std::size_t>(std::count(held.begin(), held.end(), true));
  const std::size_t passes = 1 + held_passes;  // with the base
  std::size_t pass = 0;
  EndToEndOptions session_options = model.options;
  session_options.threads = options.threads;
  session_options.keep_layer_inputs = options.reuse_prefix;
  session_options.on_chunk = [&](int done, int total, int) {
    if (options.on_progress) options.on_progress(pass * static_cast<std::size_t>(total) + done, passes * total);
  };
  std::optional<EndToEndSession> session;  // none for an empty shard
  if (held_passes > 0) session.emplace(*model.transformer, model.tokens.ids, session_options, model.tokens.path);

  const ExactTokens exact_tokens{0, 0, config.metrics.attention_options.window_mode};
  double layers_computed = 0;
  std::size_t work = 0;
  for (const AllocationUnit& unit : units) {
    UnitProfile& entry = profile.units.emplace_back();
    entry.unit = unit;
    const int unit_heads = unit.head < 0 ? shape.kv_heads : 1;
    entry.values = static_cast<std::uint64_t>(model.chunks) * model.options.ctx * shape.head_dim * unit_heads;
    for (std::size_t c = 0; c < quantizers.size(); ++c) {
      UnitMeasurement& measurement = entry.candidates.emplace_back();
      measurement.components.assign(2, std::vector<double>(config.seeds.size(), 0.0));
      bool bytes_counted = false;  // a candidate's bytes do not depend on the seed: the first pass measured counts them
      for (std::size_t s = 0; s < config.seeds.size(); ++s) {
        if (!held.at(work++)) continue;
        ++pass;
        const int first_layer = options.reuse_prefix ? unit.layer : 0;
        KvCacheQuantization cache = unit_cache(shape, unit, *exact, *quantizers[c], exact_tokens, config.seeds[s]);
        if (!engines.empty()) put_under_engine(cache, shape, unit, *engines[c][unit.role == Role::key ? 0 : 1]);
        const RunSeedResult result = session->run(cache, first_layer);
        layers_computed += shape.layers - first_layer;
        measurement.components[0][s] = metric_value(result.series, "e2e_kld");
        measurement.components[1][s] = metric_value(result.series, "e2e_ln_ppl_ratio");
        if (!bytes_counted) measurement.bytes += unit_bytes(result, unit, shape.kv_heads);
        bytes_counted = true;
      }
    }
  }
  const auto runs = static_cast<double>(held_passes);
  profile.layers_computed_share = runs > 0 ? layers_computed / (runs * shape.layers) : 1.0;
  profile.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return profile;
}

}  // namespace tqlab
