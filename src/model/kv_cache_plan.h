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
};

/// Builds the plan. `k`, `v` as a sweep config writes them (one spec, or per
/// layer and head); InputError naming `k.key_path` / `v.key_path` (e.g. "--k")
/// for a spec that does not parse or cannot take the head dim, or a layer the
/// model does not have.
KvCachePlan plan_kv_cache(const ModelConfig& config, const LayeredSpec& k, const LayeredSpec& v, ExactTokens exact);

}  // namespace tqlab
