#include "sweep/sweep_config_json.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/text.h"

namespace tqlab {

using Json = nlohmann::ordered_json;

Json spec_json(const std::string& canonical) {
  if (!canonical.starts_with("{")) return canonical;
  return Json::parse(canonical);
}

void add_engine_json(const PlannedRun& run, Json& out) {
  // Written only when not the default (tqlab; quantized unless the engine's default is another):
  // documents of tqlab's own runs stay as they were.
  if (!is_default_engine(run.engine)) out["engine"] = run.engine;
  if (prefill_written(run.engine, run.prefill)) out["prefill"] = run.prefill.spelling();
}

std::string path_for_document(const std::string& written, const std::string& resolved, const std::string& out) {
  namespace fs = std::filesystem;
  // As the user wrote it: an absolute path stays absolute, a relative one stays relative.
  if (fs::path(written).is_absolute() || out.empty()) return resolved;
  std::error_code error;
  const fs::path folder = fs::absolute(fs::path(out), error).parent_path();
  const fs::path target = fs::absolute(fs::path(resolved), error);
  if (error) return resolved;
  const fs::path relative = target.lexically_normal().lexically_relative(folder.lexically_normal());
  return relative.empty() ? resolved : relative.string();
}

namespace {

Json metrics_config_json(const MetricsConfig& metrics) {
  Json out;
  out["reconstruction"] = metrics.reconstruction;
  if (metrics.attention) {
    const AttentionConfig& attention = metrics.attention_options;
    out["attention"] = {{"chunk", attention.chunk},
                        {"causal", attention.causal},
                        {"scale", attention.scale ? Json(*attention.scale) : Json("1/sqrt(d)")},
                        {"window_mode", std::string(window_mode_name(attention.window_mode))}};
  } else {
    out["attention"] = false;
  }
  if (metrics.needle) {
    const NeedleConfig& needle = metrics.needle_options;
    out["needle"] = {{"trials", needle.trials}, {"margins", needle.margins}, {"synth_trials", needle.synth_trials}};
  } else {
    out["needle"] = false;
  }
  out["per_head"] = metrics.per_head;
  return out;
}

// The resolved model block: itself valid in a config (paths as written).
Json model_config_json(const SweepModelConfig& model, const std::string& out_path) {
  const auto place = [&](const std::string& written, const std::string& resolved) {
    return json_text(path_for_document(written, resolved, out_path));
  };
  Json out;
  out["path"] = place(model.path, model.resolved_path);
  if (!model.text.empty()) {
    out["text"] = place(model.text, model.resolved_text);
    if (!model.tokenizer.empty()) out["tokenizer"] = place(model.tokenizer, model.resolved_tokenizer);
    if (model.add_special) out["add_special"] = *model.add_special;
  } else {
    out["tokens"] = place(model.tokens, model.resolved_tokens);
  }
  out["ctx"] = model.ctx;
  out["chunks"] = model.chunks;
  out["score"] = scoring_name(model.score);
  out["bos"] = model.bos;
  return out;
}

Json data_config_json(const SweepPlan& plan) {
  const SweepConfig& config = plan.config;
  const KvDump& dump = *plan.dump;
  Json data;
  // --data comes from the command line: any bytes.
  data["path"] = json_text(path_for_document(config.data.path, config.data.resolved_path, config.out));
  data["keys"] = config.data.kv.keys;
  data["values"] = config.data.kv.values;
  data["queries"] = config.data.kv.queries.empty() ? Json(nullptr) : Json(config.data.kv.queries);
  data["layout"] = plan.layout;
  Json layers = Json::array();
  for (const KvLayerShape& shape : dump.layers()) layers.push_back(shape.layer);
  data["layers"] = layers;
  data["nonfinite"] = std::string(nonfinite_mode_name(config.data.nonfinite));
  return data;
}

}  // namespace

Json sweep_config_json(const SweepPlan& plan) {
  const SweepConfig& config = plan.config;
  Json runs = Json::array();
  for (const PlannedRun& run : plan.runs) {
    runs.push_back({{"k", spec_json(run.k)}, {"v", spec_json(run.v)}, {"window", run.window}, {"sink", run.sink}});
    add_engine_json(run, runs.back());
  }
  Json out;
  out["name"] = config.name;
  if (!config.data.path.empty()) out["data"] = data_config_json(plan);
  if (config.model) {
    out["model"] = model_config_json(*config.model, config.out);
    out["model"]["chunks"] = plan.model->chunks;  // resolved: the count run, whatever the token file holds later
    // The cache's window mode, which metrics.attention also records when attention is measured.
    out["model"]["window_mode"] = std::string(window_mode_name(config.metrics.attention_options.window_mode));
  }
  out["runs"] = runs;
  out["metrics"] = metrics_config_json(config.metrics);
  out["seeds"] = config.seeds;
  return out;
}

}  // namespace tqlab
