// A run's K and V specs resolved for a model: one quantizer per distinct spec,
// each checked against the head dim, laid out per (layer, kv head) as the KV
// hook takes them (model/kv_hook.h), with the canonical spec names results record.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kv/layered_spec.h"
#include "model/kv_hook.h"
#include "model/model_config.h"

namespace tqlab {

struct KvCachePlan {
  std::vector<std::unique_ptr<Quantizer>> quantizers;  ///< one per distinct spec string
  KvCacheQuantization cache;                           ///< seed 0; set cache.seed per run seed
  std::string k, v;  ///< canonical specs for the model's head dim (a per-layer spec as compact JSON)
  /// The run's engine bound to each distinct (K, V) pair of its layers (empty: tqlab's path);
  /// cache.engine points every layer at its pair's.
  std::vector<std::unique_ptr<EngineCache>> engines;
};

/// An engine's request for a run of `k` and `v` (engine/engine.h): its defaults as k and v, whether
/// either is given per layer or per head, and every other spec they name; the caller sets the rest.
EngineRunRequest engine_run_request(const LayeredSpec& k, const LayeredSpec& v);

/// Builds the plan. `k`, `v` as a sweep config writes them (one spec, or per
/// layer and head); InputError naming `k.key_path` / `v.key_path` (e.g. "--k")
/// for a spec that does not parse or cannot take the head dim, or a layer the
/// model does not have.
/// `engine` (canonical spelling, engine/engine.h) is checked against the run (InputError
/// naming `where` and what the engine supports) and bound to each layer's K and V (an engine that
/// takes specs per layer, llama.cpp, binds one cache per distinct pair; none takes them per head);
/// `prefill` is the run's, which the engine turns into attention's (Engine::attention_prefill). The layers the engine
/// keeps unquantized (Engine::unquantized_layers) are cached as Engine::kUnquantizedSpec; `k` and `v` of the plan stay
/// the run's specs.
KvCachePlan plan_kv_cache(const ModelConfig& config, const LayeredSpec& k, const LayeredSpec& v, ExactTokens exact,
                          const std::string& engine = "tqlab", PrefillRule prefill = {},
                          const std::string& where = "--k/--v");

}  // namespace tqlab
