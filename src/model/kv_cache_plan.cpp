#include "model/kv_cache_plan.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

const Quantizer* quantizer_for(KvCachePlan& plan, std::vector<std::string>& specs, const std::string& spec,
                               const std::string& key_path, const ModelConfig& config) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i] == spec) return plan.quantizers[i].get();
  }
  std::unique_ptr<Quantizer> quantizer;
  try {
    quantizer = make_quantizer(spec);
    quantizer->check_dim(config.head_dim);
  } catch (const InputError& error) {
    fail("{}: '{}' for the head dim {} of '{}': {}", key_path, spec, config.head_dim, config.path, error.what());
  }
  specs.push_back(spec);
  plan.quantizers.push_back(std::move(quantizer));
  return plan.quantizers.back().get();
}

std::vector<std::vector<const Quantizer*>> resolve(KvCachePlan& plan, std::vector<std::string>& specs,
                                                   const LayeredSpec& spec, const ModelConfig& config) {
  for (const auto& [layer, text] : spec.layer_specs) {
    if (layer < 0 || layer >= config.layers)
      fail("{}.layers.{}: the model has layers 0..{}", spec.key_path, layer, config.layers - 1);
  }
  for (const auto& [where, text] : spec.head_specs) {
    if (where.first < 0 || where.first >= config.layers || where.second < 0 || where.second >= config.kv_heads) {
      fail("{}.layers.{}.heads.{}: the model has layers 0..{} and kv heads 0..{}", spec.key_path, where.first,
           where.second, config.layers - 1, config.kv_heads - 1);
    }
  }
  std::vector<std::vector<const Quantizer*>> table(static_cast<std::size_t>(config.layers));
  for (int layer = 0; layer < config.layers; ++layer) {
    for (int head = 0; head < config.kv_heads; ++head) {
      table[static_cast<std::size_t>(layer)].push_back(
          quantizer_for(plan, specs, spec.spec_for(layer, head), spec.key_path, config));
    }
  }
  return table;
}

// The name results record: the spec canonical for the head dim, per layer and head when the spec says so.
std::string canonical(const LayeredSpec& spec, int dim) {
  const nlohmann::ordered_json written =
      layered_spec_json(spec, [&](const std::string& text) { return make_quantizer(text)->spec_for_dim(dim); });
  return written.is_string() ? written.get<std::string>() : written.dump();
}

// plan.engines and plan.cache.engine: one engine cache per distinct (K, V) pair of the layers, every head
// of a layer alike (check_run refused specs per head); none when the engine leaves attention to tqlab.
void bind_layers(const Engine& engine, const LayeredSpec& k, const LayeredSpec& v, const ModelConfig& config,
                 KvCachePlan& plan) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (int layer = 0; layer < config.layers; ++layer) {
    const std::pair<std::string, std::string> pair{k.spec_for(layer, 0), v.spec_for(layer, 0)};
    const auto index = static_cast<std::size_t>(std::find(pairs.begin(), pairs.end(), pair) - pairs.begin());
    if (index == pairs.size()) {
      std::unique_ptr<EngineCache> bound = engine.bind(pair.first, pair.second, config.head_dim);
      if (bound == nullptr) return;  // tqlab's own attention, for every layer
      pairs.push_back(pair);
      plan.engines.push_back(std::move(bound));
    }
    plan.cache.engine.push_back(plan.engines[index].get());
  }
}

}  // namespace

EngineRunRequest engine_run_request(const LayeredSpec& k, const LayeredSpec& v) {
  EngineRunRequest request;
  request.k = k.default_spec;
  request.v = v.default_spec;
  request.per_layer = !k.is_uniform() || !v.is_uniform();
  request.per_head = !k.head_specs.empty() || !v.head_specs.empty();
  for (const LayeredSpec* spec : {&k, &v}) {
    for (const auto& [layer, text] : spec->layer_specs) request.layer_specs.push_back(text);
    for (const auto& [where, text] : spec->head_specs) request.layer_specs.push_back(text);
  }
  return request;
}

KvCachePlan plan_kv_cache(const ModelConfig& config, const LayeredSpec& k, const LayeredSpec& v, ExactTokens exact,
                          const std::string& engine, PrefillRule prefill, const std::string& where) {
  KvCachePlan plan;
  const std::unique_ptr<Engine> chosen = parse_engine(engine, "engine");
  EngineRunRequest request = engine_run_request(k, v);
  request.window = exact.window;
  request.sink = exact.sink;
  request.prefill = prefill;
  request.head_dim = config.head_dim;
  request.where = where;
  chosen->check_run(request);
  bind_layers(*chosen, k, v, config, plan);
  plan.cache.prefill = chosen->attention_prefill(prefill);
  std::vector<std::string> specs;
  // The engine's spellings as tqlab's specs, for the quantizers and the names results record.
  LayeredSpec k_spec = k, v_spec = v;
  k_spec.default_spec = chosen->quantizer_spec(k.default_spec);
  v_spec.default_spec = chosen->quantizer_spec(v.default_spec);
  // The cache holds the engine's unquantized layers too; results record the run's specs alone.
  LayeredSpec k_cache = k_spec, v_cache = v_spec;
  for (const int layer : chosen->unquantized_layers(config.layers)) {
    k_cache.layer_specs[layer] = v_cache.layer_specs[layer] = Engine::kUnquantizedSpec;
  }
  plan.cache.key = resolve(plan, specs, k_cache, config);
  plan.cache.value = resolve(plan, specs, v_cache, config);
  plan.cache.exact = exact;
  plan.k = canonical(k_spec, config.head_dim);
  plan.v = canonical(v_spec, config.head_dim);
  return plan;
}

}  // namespace tqlab
