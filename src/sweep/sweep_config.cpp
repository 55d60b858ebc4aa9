#include "sweep/sweep_config.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/decimal.h"
#include "core/error.h"
#include "core/text.h"
#include "io/json_reader.h"
#include "model/token_file.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

constexpr int kMaxTokenCount = std::numeric_limits<int>::max();
constexpr int kMaxTrials = 1 << 24;
constexpr int kMaxLayerOrHead = 1 << 20;

// A path from the config resolves against the config file's folder.
std::string resolve_against(const std::string& config_path, const std::string& path) {
  const std::filesystem::path written(path);
  if (written.is_absolute()) return path;
  const std::filesystem::path folder = std::filesystem::path(config_path).parent_path();
  return (folder / written).lexically_normal().string();
}

// A quantizer spec string, validated now so a typo costs nothing.
std::string read_spec(const JsonReader& reader) {
  const std::string spec = reader.as_string();
  try {
    (void)make_quantizer(spec);
  } catch (const InputError& error) {
    reader.fail("{}", error.what());
  }
  return spec;
}

int read_map_number(const JsonReader& owner, const std::string& key, const char* what) {
  const std::optional<std::int64_t> number = decimal_integer(key, 0, kMaxLayerOrHead);
  if (!number) owner.fail("key '{}' is not a {} number (expected e.g. \"0\")", key, what);
  return static_cast<int>(*number);
}

// "tq:b=3", or {"default": "tq:b=3", "layers": {"0": "tq:b=5" | {"default": ..., "heads": {"1": ...}}}}.
LayeredSpec read_layered_spec(const JsonReader& reader) {
  LayeredSpec spec;
  spec.key_path = reader.path();
  if (reader.is_string()) {
    spec.default_spec = read_spec(reader);
    return spec;
  }
  if (!reader.is_object()) {
    reader.fail("expected a quantizer spec string (e.g. \"tq:b=3\") or {{\"default\": spec, \"layers\": {{...}}}}, "
                "got {}",
                reader.type_name());
  }
  reader.allow_only({"default", "layers"});
  spec.default_spec = read_spec(reader.at("default"));
  if (const auto layers = reader.find("layers")) {
    for (const auto& [key, layer_reader] : layers->members()) {
      const int layer = read_map_number(*layers, key, "layer");
      if (layer_reader.is_string()) {
        spec.layer_specs[layer] = read_spec(layer_reader);
        continue;
      }
      if (!layer_reader.is_object()) {
        layer_reader.fail("expected a spec string or {{\"default\": spec, \"heads\": {{\"0\": spec}}}}, got {}",
                          layer_reader.type_name());
      }
      layer_reader.allow_only({"default", "heads"});
      if (const auto layer_default = layer_reader.find("default")) spec.layer_specs[layer] = read_spec(*layer_default);
      if (const auto heads = layer_reader.find("heads")) {
        for (const auto& [head_key, head_reader] : heads->members()) {
          spec.head_specs[{layer, read_map_number(*heads, head_key, "head")}] = read_spec(head_reader);
        }
      }
    }
  }
  return spec;
}

int read_token_count(const JsonReader& reader) { return static_cast<int>(reader.as_integer(0, kMaxTokenCount)); }

template <typename T, typename Read>
std::vector<T> read_nonempty_list(const JsonReader& reader, Read read) {
  std::vector<T> out;
  for (const JsonReader& element : reader.elements()) out.push_back(read(element));
  if (out.empty()) reader.fail("the list is empty; give at least one value");
  return out;
}

void read_data(const JsonReader& reader, const std::string& config_path, SweepDataConfig& data) {
  reader.allow_only({"path", "keys", "values", "queries", "layout", "layers", "nonfinite"});
  data.path = reader.at("path").as_string();
  if (data.path.empty()) reader.at("path").fail("the data path is empty");
  data.resolved_path = resolve_against(config_path, data.path);
  // Queries are optional: without them the attention metrics are null.
  data.kv.queries_required = false;
  data.kv.layout.clear();
  const auto read_template = [&](const char* key, std::string& slot) {
    if (const auto found = reader.find(key)) {
      slot = found->as_string();
      if (slot.find("{layer}") == std::string::npos) {
        found->fail("the name template '{}' has no {{layer}} placeholder (e.g. \"layers.{{layer}}.k\")", slot);
      }
    }
  };
  read_template("keys", data.kv.keys);
  read_template("values", data.kv.values);
  if (const auto queries = reader.find("queries"); queries && queries->value().is_null()) {
    data.kv.queries.clear();  // "queries": null says there are none
  } else {
    read_template("queries", data.kv.queries);
  }
  if (const auto layout = reader.find("layout")) {
    data.kv.layout = layout->as_string();
    try {
      (void)parse_kv_layout(data.kv.layout);
    } catch (const InputError& error) {
      layout->fail("{}", error.what());
    }
  }
  if (const auto layers = reader.find("layers")) {
    if (layers->is_string()) {
      try {
        data.kv.layers = parse_layer_list(layers->as_string());
      } catch (const InputError& error) {
        layers->fail("{}", error.what());
      }
    } else {
      data.kv.layers = read_nonempty_list<int>(
          *layers, [](const JsonReader& element) { return static_cast<int>(element.as_integer(0, kMaxLayerOrHead)); });
    }
  }
  if (const auto nonfinite = reader.find("nonfinite")) {
    const std::string mode = nonfinite->as_string();
    const std::optional<NonfiniteMode> parsed = kNonfiniteModeNames.parse(mode);
    if (!parsed) {
      nonfinite->fail("'{}' is not a mode (allowed: {})", mode, fmt::join(kNonfiniteModeNames.names(), ", "));
    }
    data.nonfinite = *parsed;
  }
}

// "engine", "preset" and "prefill" of a model block or a run (engine/engine.h), canonical. A
// "preset" (vLLM's) joins the block's own engine, else `inherited` (the model block's, for a run).
void read_engine_keys(const JsonReader& reader, std::string& engine, std::optional<PrefillRule>& prefill,
                      const std::string& inherited = "tqlab") {
  if (const auto found = reader.find("engine")) {
    try {
      engine = canonical_engine(found->as_string(), "engine");
    } catch (const InputError& error) {
      found->fail("{}", error.what());
    }
  }
  if (const auto found = reader.find("preset")) {
    try {
      engine = engine_with_preset(engine.empty() ? inherited : engine, found->as_string(), "preset");
    } catch (const InputError& error) {
      found->fail("{}", error.what());
    }
  }
  if (const auto found = reader.find("prefill")) {
    try {
      prefill = parse_prefill(found->as_string(), "prefill");
    } catch (const InputError& error) {
      found->fail("{}", error.what());
    }
  }
}

void read_model(const JsonReader& reader, const std::string& config_path, SweepModelConfig& model,
                std::optional<WindowMode>& window_mode) {
  reader.allow_only(
      {"path", "tokens", "text", "tokenizer", "add_special", "ctx", "chunks", "score", "bos", "window_mode", "engine",
       "preset", "prefill"});
  const auto path_of = [&](const char* key, std::string& written, std::string& resolved) {
    const auto found = reader.find(key);
    if (!found) return;
    written = found->as_string();
    if (written.empty()) found->fail("the path is empty");
    resolved = resolve_against(config_path, written);
  };
  if (!reader.has("path")) reader.fail("the model block needs \"path\": a Hugging Face checkpoint folder");
  path_of("path", model.path, model.resolved_path);
  if (reader.has("tokens") == reader.has("text")) {
    reader.fail("the model block needs \"tokens\" (a token id file) or \"text\" (a text file), one of them");
  }
  if (const auto tokens = reader.find("tokens")) {
    // "FILE.safetensors:NAME" names a tensor of the file: resolve the file part only.
    const std::string written = tokens->as_string();
    if (written.empty()) tokens->fail("the path is empty");
    // FILE.safetensors:NAME names a tensor of the file: the file part is relative to the config.
    const std::string resolved = resolve_against(config_path, written);
    const TokenFileSpec split = split_token_spec(resolved);
    model.tokens = written;
    model.resolved_tokens = split.tensor.empty() ? resolved : split.path + ":" + split.tensor;
  }
  path_of("text", model.text, model.resolved_text);
  path_of("tokenizer", model.tokenizer, model.resolved_tokenizer);
  if (!model.tokenizer.empty() && model.text.empty()) reader.at("tokenizer").fail("a tokenizer is for \"text\"");
  if (const auto add_special = reader.find("add_special")) {
    if (model.text.empty()) add_special->fail("add_special is for \"text\"");
    model.add_special = add_special->as_bool();
  }
  if (const auto ctx = reader.find("ctx")) model.ctx = static_cast<int>(ctx->as_integer(2, kMaxTokenCount));
  if (const auto chunks = reader.find("chunks")) model.chunks = static_cast<int>(chunks->as_integer(0, kMaxTokenCount));
  if (const auto score = reader.find("score")) {
    const std::optional<Scoring> scoring = parse_scoring(score->as_string());
    if (!scoring) {
      score->fail("'{}' is not a scoring (allowed: {})", score->as_string(), fmt::join(kScoringNames.names(), ", "));
    }
    model.score = *scoring;
  }
  if (const auto bos = reader.find("bos")) model.bos = bos->as_bool();
  read_engine_keys(reader, model.engine, model.prefill);
  if (const auto mode = reader.find("window_mode")) {
    window_mode = parse_window_mode(mode->as_string());
    if (!window_mode) {
      const std::string names = fmt::format("{}", fmt::join(kWindowModeNames.names(), ", "));
      mode->fail("'{}' is not a window mode (allowed: {})", mode->as_string(), names);
    }
  }
}

// `true`, `false` or an options object (which enables the family).
bool read_family_switch(const JsonReader& reader) {
  if (reader.is_bool()) return reader.as_bool();
  if (!reader.is_object()) reader.fail("expected true, false or an options object, got {}", reader.type_name());
  return true;
}

void read_attention(const JsonReader& reader, AttentionConfig& attention) {
  reader.allow_only({"chunk", "causal", "scale", "window_mode"});
  if (const auto chunk = reader.find("chunk")) attention.chunk = static_cast<int>(chunk->as_integer(1, kMaxTokenCount));
  if (const auto causal = reader.find("causal")) attention.causal = causal->as_bool();
  if (const auto scale = reader.find("scale")) {
    if (scale->is_string()) {
      if (scale->as_string() != "1/sqrt(d)") {
        scale->fail("'{}' is not a scale (allowed: a positive number, or \"1/sqrt(d)\")", scale->as_string());
      }
      attention.scale.reset();
    } else {
      const double value = scale->as_number();
      if (!(value > 0)) scale->fail("the scale must be positive, got {}", value);
      attention.scale = value;
    }
  }
  if (const auto mode = reader.find("window_mode")) {
    const std::string name = mode->as_string();
    const std::optional<WindowMode> parsed = parse_window_mode(name);
    if (!parsed) mode->fail("'{}' is not a window mode (allowed: {})", name, fmt::join(kWindowModeNames.names(), ", "));
    attention.window_mode = *parsed;
  }
}

void read_needle(const JsonReader& reader, NeedleConfig& needle) {
  reader.allow_only({"trials", "margins", "synth_trials"});
  if (const auto trials = reader.find("trials")) needle.trials = static_cast<int>(trials->as_integer(0, kMaxTrials));
  if (const auto margins = reader.find("margins")) {
    needle.margins = read_nonempty_list<double>(*margins, [](const JsonReader& element) {
      const double margin = element.as_number();
      if (!(margin > 0) || margin > 100)
        element.fail("a margin is a logit gap in nats, 0 < margin <= 100; got {}", margin);
      return margin;
    });
    std::set<double> distinct(needle.margins.begin(), needle.margins.end());
    if (distinct.size() != needle.margins.size()) margins->fail("a margin is listed twice");
  }
  if (const auto synth = reader.find("synth_trials")) {
    needle.synth_trials = static_cast<int>(synth->as_integer(0, kMaxTrials));
  }
}

void read_metrics(const JsonReader& reader, MetricsConfig& metrics) {
  reader.allow_only({"reconstruction", "attention", "needle", "per_head"});
  if (const auto family = reader.find("reconstruction")) {
    metrics.reconstruction = read_family_switch(*family);
    if (family->is_object()) family->allow_only({});
  }
  if (const auto family = reader.find("attention")) {
    metrics.attention = read_family_switch(*family);
    if (family->is_object()) read_attention(*family, metrics.attention_options);
  }
  if (const auto family = reader.find("needle")) {
    metrics.needle = read_family_switch(*family);
    if (family->is_object()) read_needle(*family, metrics.needle_options);
  }
  if (const auto per_head = reader.find("per_head")) metrics.per_head = per_head->as_bool();
}

void read_grid(const JsonReader& reader, std::vector<SweepRunConfig>& runs) {
  reader.allow_only({"k", "v", "window", "sink"});
  const JsonReader k_list = reader.at("k");
  const JsonReader v_list = reader.at("v");
  const auto k = read_nonempty_list<LayeredSpec>(k_list, read_layered_spec);
  const auto v = read_nonempty_list<LayeredSpec>(v_list, read_layered_spec);
  std::vector<int> windows{0}, sinks{0};
  if (const auto found = reader.find("window")) windows = read_nonempty_list<int>(*found, read_token_count);
  if (const auto found = reader.find("sink")) sinks = read_nonempty_list<int>(*found, read_token_count);
  for (std::size_t ki = 0; ki < k.size(); ++ki) {
    for (std::size_t vi = 0; vi < v.size(); ++vi) {
      for (std::size_t wi = 0; wi < windows.size(); ++wi) {
        for (std::size_t si = 0; si < sinks.size(); ++si) {
          runs.push_back({k[ki], v[vi], windows[wi], sinks[si],
                          fmt::format("grid (k[{}], v[{}], window[{}], sink[{}])", ki, vi, wi, si), "",
                          std::nullopt});
        }
      }
    }
  }
}

// "allocation": FILE, a tqlab.allocation/1 document (docs/ALLOCATE.md#document): its allocation's run
// {"k", "v"}, read as a run's k and v are, the key paths naming the file.
void read_allocation_run(const JsonReader& reader, const std::string& config_path, SweepRunConfig& config) {
  const std::string written = reader.as_string();
  if (written.empty()) reader.fail("the allocation file's path is empty");
  const std::string file = resolve_against(config_path, written);
  nlohmann::json document;
  try {
    document = read_json_file(file, "allocation");
  } catch (const InputError& error) {
    reader.fail("{}", error.what());  // the config's key path first, then the file's trouble
  }
  const JsonReader root(document, file, "", "allocation");
  if (root.at("schema").as_string() != "tqlab.allocation/1") root.at("schema").fail("not tqlab.allocation/1");
  const JsonReader run = root.at("allocation").at("run");
  config.k = read_layered_spec(run.at("k"));
  config.v = read_layered_spec(run.at("v"));
}

// A run's "k" and "v"; an engine that defines them (a vLLM preset) fills in those not given.
void read_run_specs(const JsonReader& run, const std::string& engine, SweepRunConfig& config) {
  const EngineSpecs defined = parse_engine(engine, "engine")->defined_specs();
  const auto read = [&](const char* key, const std::string& engine_spec) {
    if (run.has(key) || engine_spec.empty()) return read_layered_spec(run.at(key));
    return LayeredSpec{engine_spec, {}, {}, run.path() + "." + key};
  };
  config.k = read("k", defined.k);
  config.v = read("v", defined.v);
}

void read_runs(const JsonReader& reader, const std::string& path, const std::string& model_engine,
               std::vector<SweepRunConfig>& runs) {
  for (const JsonReader& run : reader.elements()) {
    SweepRunConfig config;
    const bool allocation = run.is_object() && run.has("allocation");
    if (allocation) {
      run.allow_only({"allocation", "window", "sink", "engine", "preset", "prefill"});
    } else {
      run.allow_only({"k", "v", "window", "sink", "engine", "preset", "prefill"});
    }
    read_engine_keys(run, config.engine, config.prefill, model_engine);
    if (allocation) {
      read_allocation_run(run.at("allocation"), path, config);
    } else {
      read_run_specs(run, config.engine.empty() ? model_engine : config.engine, config);
    }
    if (const auto window = run.find("window")) config.window = read_token_count(*window);
    if (const auto sink = run.find("sink")) config.sink = read_token_count(*sink);
    config.origin = run.path();
    runs.push_back(std::move(config));
  }
}

}  // namespace


std::string_view nonfinite_mode_name(NonfiniteMode mode) { return kNonfiniteModeNames.name(mode); }

std::string describe_layers(const std::optional<std::vector<int>>& layers) {
  if (!layers) return "all";
  return fmt::format("{}", fmt::join(*layers, ","));
}

std::string describe_sweep_inputs(const SweepConfig& config) {
  if (!config.data.path.empty() || !config.model) return fmt::format("'{}'", printable(config.data.path));
  const SweepModelConfig& model = *config.model;
  const bool text = !model.text.empty();
  return fmt::format("model '{}' on {} '{}'", printable(model.path), text ? "text" : "tokens",
                     printable(text ? model.text : model.tokens));
}

namespace {

// Runs without their own "engine"/"prefill" take the model block's. An engine other than tqlab
// changes the model's attention end to end; on a dump (the offline metric families) its run
// measures what the engine's cache stores, read back (sweep_plan.cpp, Engine::cache_quantizer).
void apply_engine_defaults(SweepConfig& config) {
  for (SweepRunConfig& run : config.runs) {
    if (run.engine.empty()) run.engine = config.model ? config.model->engine : "tqlab";
    if (!run.prefill && config.model) run.prefill = config.model->prefill;
    if (!run.prefill) {
      run.prefill = parse_engine(run.engine, "engine")->default_prefill(config.model ? config.model->ctx : 0);
    }
  }
}

}  // namespace

SweepConfig parse_sweep_config(const nlohmann::json& document, const std::string& path, bool require_runs) {
  const JsonReader root(document, path);
  root.allow_only({"name", "data", "model", "grid", "runs", "metrics", "seeds", "seed", "out"});
  SweepConfig config;
  config.config_path = path;
  config.name = std::filesystem::path(path).stem().string();
  if (const auto name = root.find("name")) {
    config.name = name->as_string();
    if (config.name.empty()) name->fail("the name is empty");
  }
  if (!root.has("data") && !root.has("model")) {
    root.fail("no data: give \"data\" (a KV dump) or \"model\" (a checkpoint whose own Q/K/V are swept), or both");
  }
  if (const auto data = root.find("data")) {
    read_data(*data, path, config.data);
  } else {
    // The model's own dump: its layout metadata and tqlab's name templates, queries included.
    config.data.kv.queries_required = false;
    config.data.kv.layout.clear();
  }
  std::optional<WindowMode> model_window_mode;
  if (const auto model = root.find("model")) read_model(*model, path, config.model.emplace(), model_window_mode);
  if (const auto grid = root.find("grid")) read_grid(*grid, config.runs);
  if (const auto runs = root.find("runs")) {
    read_runs(*runs, path, config.model ? config.model->engine : "tqlab", config.runs);
  }
  if (config.runs.empty() && (require_runs || root.has("grid") || root.has("runs"))) {
    root.fail("no runs: give \"grid\" with non-empty \"k\" and \"v\" lists, or a non-empty \"runs\" list");
  }
  if (const auto metrics = root.find("metrics")) {
    read_metrics(*metrics, config.metrics);
    // With a model block the end-to-end metrics are measured whatever the offline families say.
    if (!config.model && !config.metrics.reconstruction && !config.metrics.attention && !config.metrics.needle) {
      metrics->fail("every metric family is switched off; enable reconstruction, attention or needle (or give a "
                    "\"model\" block, whose end-to-end metrics need none of them)");
    }
  }
  // The cache's window mode is one rule for both paths: the attention metrics' and the model's.
  if (model_window_mode) {
    const auto metrics = root.find("metrics");
    const auto attention = metrics && metrics->is_object() ? metrics->find("attention") : std::nullopt;
    const bool given = attention && attention->is_object() && attention->has("window_mode");
    if (given && config.metrics.attention_options.window_mode != *model_window_mode) {
      root.at("model")
          .at("window_mode")
          .fail("'{}' differs from metrics.attention.window_mode '{}'; give one of them",
                window_mode_name(*model_window_mode), window_mode_name(config.metrics.attention_options.window_mode));
    }
    config.metrics.attention_options.window_mode = *model_window_mode;
  }
  if (root.has("seeds") && root.has("seed")) root.fail("give \"seeds\" (a list) or \"seed\" (one number), not both");
  if (const auto seeds = root.find("seeds")) {
    config.seeds = read_nonempty_list<std::uint64_t>(*seeds, [](const JsonReader& seed) { return seed.as_unsigned(); });
    std::set<std::uint64_t> distinct(config.seeds.begin(), config.seeds.end());
    if (distinct.size() != config.seeds.size()) seeds->fail("a seed is listed twice");
  }
  if (const auto seed = root.find("seed")) config.seeds = {seed->as_unsigned()};
  if (const auto out = root.find("out")) {
    const std::string written = out->as_string();
    if (written.empty()) out->fail("the output path is empty");
    config.out = resolve_against(path, written);
  }
  apply_engine_defaults(config);
  return config;
}

SweepConfig load_sweep_config(const std::string& path, bool require_runs) {
  return parse_sweep_config(read_json_file(path), path, require_runs);
}

}  // namespace tqlab
