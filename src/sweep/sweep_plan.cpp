#include "sweep/sweep_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "engine/engine.h"
#include "model/kv_cache_plan.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

// The quantizer of `spec`, built once per distinct string: tqlab's own, or with an engine what that
// engine's cache stores for the spec's cache type, read back (Engine::cache_quantizer).
int quantizer_index(SweepPlan& plan, const std::string& spec, const Engine* engine = nullptr) {
  const std::string name = engine == nullptr ? spec : fmt::format("{} (engine {})", spec, engine->spelling());
  for (std::size_t i = 0; i < plan.quantizer_specs.size(); ++i) {
    if (plan.quantizer_specs[i] == name) return static_cast<int>(i);
  }
  plan.quantizers.push_back(engine == nullptr ? make_quantizer(spec) : engine_cache_quantizer(*engine, spec));
  plan.quantizer_specs.push_back(name);
  return static_cast<int>(plan.quantizers.size()) - 1;
}

std::string spec_key_path(const LayeredSpec& spec, int layer, int head) {
  if (spec.head_specs.count({layer, head})) return fmt::format("{}.layers.{}.heads.{}", spec.key_path, layer, head);
  if (spec.layer_specs.count(layer)) return fmt::format("{}.layers.{}", spec.key_path, layer);
  return spec.is_uniform() ? spec.key_path : spec.key_path + ".default";
}

// Quantizer per [layer index][kv head] for one role, each checked against the dim it meets.
std::vector<std::vector<int>> resolve_layered(SweepPlan& plan, const LayeredSpec& spec, Role role,
                                              const Engine* engine) {
  const KvDump& dump = *plan.dump;
  std::vector<std::vector<int>> table;
  std::set<int> layers_present;
  for (std::size_t li = 0; li < dump.layers().size(); ++li) {
    const KvLayerShape& shape = dump.layers()[li];
    layers_present.insert(shape.layer);
    const int dim = role == Role::key ? shape.key_dim : shape.value_dim;
    std::vector<int>& heads = table.emplace_back();
    for (int head = 0; head < shape.kv_heads; ++head) {
      const std::string& text = spec.spec_for(shape.layer, head);
      const int index = quantizer_index(plan, text, engine);
      try {
        plan.quantizers[static_cast<std::size_t>(index)]->check_dim(dim);
      } catch (const InputError& error) {
        fail("config '{}': {}: '{}' cannot take the {} head dim {} of layer {} in '{}': {}", plan.config.config_path,
             spec_key_path(spec, shape.layer, head), text, role_name(role), dim, shape.layer, dump.file().path(),
             error.what());
      }
      heads.push_back(index);
    }
  }
  // A per-layer entry for a layer that is not swept: a typo, or --layers left it out.
  std::set<int> unused;
  for (const auto& [layer, text] : spec.layer_specs) unused.insert(layer);
  for (const auto& [where, text] : spec.head_specs) unused.insert(where.first);
  for (int layer : unused) {
    if (!layers_present.count(layer)) {
      plan.warnings.push_back(fmt::format("{}.layers.{}: layer {} is not among the layers swept; its spec is unused",
                                          spec.key_path, layer, layer));
    }
  }
  return table;
}

// One name per configuration: specs canonical for the dims they meet (an engine's cache types by
// tqlab's spec of the same format, as its end-to-end runs name them).
std::string canonical(const SweepPlan& plan, const LayeredSpec& spec, Role role, const Engine* engine) {
  std::set<int> dims;
  for (const KvLayerShape& shape : plan.dump->layers())
    dims.insert(role == Role::key ? shape.key_dim : shape.value_dim);
  const auto one = [&](const std::string& text) {
    const std::unique_ptr<Quantizer> quantizer = make_quantizer(engine ? engine->quantizer_spec(text) : text);
    return dims.size() == 1 ? quantizer->spec_for_dim(*dims.begin()) : quantizer->spec();
  };
  if (spec.is_uniform()) return one(spec.default_spec);
  std::string text = fmt::format("{{\"default\":\"{}\",\"layers\":{{", one(spec.default_spec));
  std::set<int> layers;
  for (const auto& [layer, layer_spec] : spec.layer_specs) layers.insert(layer);
  for (const auto& [where, head_spec] : spec.head_specs) layers.insert(where.first);
  bool first_layer = true;
  for (int layer : layers) {
    text += fmt::format("{}\"{}\":", first_layer ? "" : ",", layer);
    first_layer = false;
    const auto layer_spec = spec.layer_specs.find(layer);
    std::vector<std::pair<int, std::string>> heads;
    for (const auto& [where, head_spec] : spec.head_specs) {
      if (where.first == layer) heads.emplace_back(where.second, head_spec);
    }
    if (heads.empty()) {
      text += fmt::format("\"{}\"", one(layer_spec->second));
      continue;
    }
    text += "{";
    if (layer_spec != spec.layer_specs.end()) text += fmt::format("\"default\":\"{}\",", one(layer_spec->second));
    text += "\"heads\":{";
    for (std::size_t h = 0; h < heads.size(); ++h) {
      text += fmt::format("{}\"{}\":\"{}\"", h ? "," : "", heads[h].first, one(heads[h].second));
    }
    text += "}}";
  }
  return text + "}}";
}

// Two runs of one identity would be measured twice and could not be told apart in results.
void require_distinct_runs(const SweepPlan& plan) {
  std::map<std::string, std::string> seen;  // identity -> origin
  for (const PlannedRun& planned : plan.runs) {
    const auto [existing, inserted] = seen.emplace(planned.identity(), planned.origin);
    if (!inserted) {
      fail("config '{}': {} and {} are the same run ({}); each run must differ in k, v, window or sink",
           plan.config.config_path, existing->second, planned.origin, planned.identity());
    }
  }
}

// The runs of a sweep of end-to-end metrics only, as the model resolves their k and v specs.
void plan_model_runs(SweepPlan& plan) {
  const SweepConfig& cfg = plan.config;
  for (std::size_t r = 0; r < cfg.runs.size(); ++r) {
    PlannedRun planned;
    planned.k = plan.model->runs[r].k;
    planned.v = plan.model->runs[r].v;
    planned.window = cfg.runs[r].window;
    planned.sink = cfg.runs[r].sink;
    planned.engine = cfg.runs[r].engine;
    planned.prefill = cfg.runs[r].prefill.value_or(PrefillRule{});
    planned.origin = cfg.runs[r].origin;
    plan.runs.push_back(std::move(planned));
  }
  require_distinct_runs(plan);
}

// The KV dump of plan.file, read with the config's data.kv and the layout resolved for the file.
void open_dump(SweepPlan& plan) {
  KvDumpSpec kv = plan.config.data.kv;
  const ResolvedKvLayout resolved = resolve_kv_layout(*plan.file, kv.layout, "data.layout");
  plan.layout = resolved.layout;
  kv.layout = plan.layout;
  kv.layout_assumed = resolved.source == ResolvedKvLayout::Source::assumed;
  plan.dump = std::make_unique<KvDump>(*plan.file, kv);
}

// An offline run's engine, checked as an end-to-end run of it is (its cache types, one for every
// layer, no windows), at the dump's key head dim; null for tqlab's own semantics.
std::unique_ptr<Engine> offline_engine(const SweepPlan& plan, const SweepRunConfig& run) {
  if (is_default_engine(run.engine)) return nullptr;
  std::unique_ptr<Engine> engine = parse_engine(run.engine, run.origin + ".engine");
  if (const EngineSpecs specs = engine->defined_specs(); !specs.k.empty()) {
    // vLLM keeps layers at fp16 by the model's depth, which a dump does not tell.
    fail(
        "config '{}': {}: engine {} runs end to end only (the layers it keeps unquantized depend on the model's "
        "depth); on a dump give its formats as the run's specs: \"k\": \"{}\", \"v\": \"{}\"",
        plan.config.config_path, run.origin, engine->spelling(), specs.k, specs.v);
  }
  EngineRunRequest request = engine_run_request(run.k, run.v);
  request.window = run.window;
  request.sink = run.sink;
  request.prefill = run.prefill.value_or(PrefillRule{});
  request.head_dim = plan.dump->layers().front().key_dim;
  request.where = run.origin;
  engine->check_run(request);
  return engine;
}

// One run of the config over the dump: its quantizers per [layer index][kv head], canonical specs, and the
// quantizer of the synthetic needle test (-1 when its k spec cannot take that dim).
PlannedRun plan_dump_run(SweepPlan& plan, const SweepRunConfig& run) {
  PlannedRun planned;
  const std::unique_ptr<Engine> engine = offline_engine(plan, run);
  planned.k_quantizer = resolve_layered(plan, run.k, Role::key, engine.get());
  planned.v_quantizer = resolve_layered(plan, run.v, Role::value, engine.get());
  planned.k = canonical(plan, run.k, Role::key, engine.get());
  planned.v = canonical(plan, run.v, Role::value, engine.get());
  planned.window = run.window;
  planned.sink = run.sink;
  planned.engine = run.engine;
  planned.prefill = run.prefill.value_or(PrefillRule{});
  planned.origin = run.origin;
  const int synthetic = quantizer_index(plan, run.k.default_spec, engine.get());
  try {
    plan.quantizers[static_cast<std::size_t>(synthetic)]->check_dim(kSyntheticNeedleDim);
    planned.synthetic_needle_quantizer = synthetic;
  } catch (const InputError&) {
    planned.synthetic_needle_quantizer = -1;
  }
  return planned;
}

// Which offline metrics the dump allows (attention and the planted needle need queries), with a warning for
// those the config asks for and the dump cannot give.
void plan_offline_metrics(SweepPlan& plan) {
  const SweepConfig& cfg = plan.config;
  const KvDump& dump = *plan.dump;
  const MetricsConfig& metrics = cfg.metrics;
  plan.reconstruction = metrics.reconstruction;
  const bool wants_queries = metrics.attention || (metrics.needle && metrics.needle_options.trials > 0);
  if (wants_queries && !dump.has_queries()) {
    plan.warnings.push_back(fmt::format(
        "'{}' has no queries ({}): the attention and planted-needle metrics are null; reconstruction{} still run",
        dump.file().path(),
        cfg.data.kv.queries.empty() ? "data.queries is null"
                                    : fmt::format("no tensor matches the queries template '{}'", cfg.data.kv.queries),
        metrics.needle && metrics.needle_options.synth_trials > 0 ? " and the synthetic needle test" : ""));
  }
  plan.attention = metrics.attention && dump.has_queries();
  plan.needle = metrics.needle && metrics.needle_options.trials > 0 && dump.has_queries();
  plan.synthetic_needle = metrics.needle && metrics.needle_options.synth_trials > 0;
}

// The planted-needle trials, placed outside every run's window and sink; a warning when none fits.
void plan_planted_needles(SweepPlan& plan) {
  const MetricsConfig& metrics = plan.config.metrics;
  int largest_window = 0, largest_sink = 0;
  for (const PlannedRun& run : plan.runs) {
    largest_window = std::max(largest_window, run.window);
    largest_sink = std::max(largest_sink, run.sink);
  }
  plan.needle_trials = plan_needle_trials(*plan.dump, metrics.needle_options.trials, metrics.attention_options,
                                          largest_window, largest_sink);
  if (plan.needle_trials.empty()) {
    plan.warnings.push_back(fmt::format(
        "no planted-needle trial fits: no query has a key before it in its chunk outside the largest window ({}) "
        "and sink ({}); the needle_top1/needle_weight_ratio metrics are null",
        largest_window, largest_sink));
  }
}

// A warning for each run whose k spec cannot take the synthetic needle's head dim.
void warn_synthetic_needle_unfit(SweepPlan& plan) {
  for (const PlannedRun& run : plan.runs) {
    if (run.synthetic_needle_quantizer < 0) {
      plan.warnings.push_back(fmt::format("{}: k spec cannot take head dim {}: its synthetic needle metrics are null",
                                          run.origin, kSyntheticNeedleDim));
    }
  }
}

}  // namespace

std::string PlannedRun::identity() const {
  std::string id = fmt::format("k={} v={} window={} sink={}", k, v, window, sink);
  // Only what differs from the default, so documents of tqlab's own runs keep their ids.
  if (!is_default_engine(engine)) id += " engine=" + engine;
  if (prefill_written(engine, prefill)) id += " prefill=" + prefill.spelling();
  return id;
}

double attention_scale(const AttentionConfig& attention, int key_dim) {
  return attention.scale ? *attention.scale : 1.0 / std::sqrt(static_cast<double>(key_dim));
}

bool wants_offline_metrics(const MetricsConfig& metrics) {
  return metrics.reconstruction || metrics.attention || metrics.needle;
}

int synthetic_trial_count(const SweepPlan& plan) {
  return plan.synthetic_needle ? plan.config.metrics.needle_options.synth_trials : 0;
}

SweepPlan plan_sweep(SweepConfig config, const PlanOptions& options) {
  SweepPlan plan;
  plan.config = std::move(config);
  const SweepConfig& cfg = plan.config;
  if (cfg.model) plan.model = open_sweep_model(cfg);
  if (!cfg.data.path.empty()) {
    plan.file = TensorFile::open(cfg.data.resolved_path);
  } else if (wants_offline_metrics(cfg.metrics)) {
    DataIdentity identity;
    plan.file = model_kv_dump(*plan.model, options.threads, identity.bytes, identity.sha256);
    plan.generated_data = identity;
  } else {
    // End-to-end metrics only: the runs as the model resolves them.
    plan_model_runs(plan);
    return plan;
  }
  open_dump(plan);
  for (const SweepRunConfig& run : cfg.runs) plan.runs.push_back(plan_dump_run(plan, run));
  require_distinct_runs(plan);

  plan_offline_metrics(plan);
  if (plan.needle) plan_planted_needles(plan);
  if (plan.synthetic_needle) warn_synthetic_needle_unfit(plan);
  return plan;
}

}  // namespace tqlab
