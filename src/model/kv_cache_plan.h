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
  std::unique_ptr<EngineCache> engine;  ///< the run's engine bound to K and V (null: tqlab's path)
};

/// Builds the plan. `k`, `v` as a sweep config writes them (one spec, or per
/// layer and head); InputError naming `k.key_path` / `v.key_path` (e.g. "--k")
/// for a spec that does not parse or cannot take the head dim, or a layer the
/// model does not have.
/// `engine` (canonical spelling, engine/engine.h) is checked against the run (InputError
/// naming `where` and what the engine supports) and bound to K and V; `prefill` is the run's, which
/// the engine turns into attention's (Engine::attention_prefill). The layers the engine keeps
/// unquantized (Engine::unquantized_layers) are cached as Engine::kUnquantizedSpec; `k` and `v` of the
/// plan stay the run's specs.
KvCachePlan plan_kv_cache(const ModelConfig& config, const LayeredSpec& k, const LayeredSpec& v, ExactTokens exact,
                          const std::string& engine = "tqlab", PrefillRule prefill = {},
                          const std::string& where = "--k/--v");

}  // namespace tqlab
