#include "sweep/sweep_results.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/parallel.h"
#include "core/text.h"
#include "kv/kv_slab.h"
#include "results/results_document.h"
#include "sweep/sweep_config_json.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

Json optional_number(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

Json optional_numbers(const std::vector<std::optional<double>>& values) {
  Json out = Json::array();
  for (const auto& value : values) out.push_back(optional_number(value));
  return out;
}

std::string tensor_dtype(const KvDump& dump, Role role) {
  if (role == Role::query && !dump.has_queries()) return "";
  const TensorView* view = dump.file().find(slab_tensor_name(dump, KvSlab{role, 0, 0, 0}));
  return view != nullptr ? std::string(dtype_name(view->dtype)) : "";
}

Json data_json(const SweepPlan& plan, const SweepResults& results, const DataIdentity& identity) {
  const KvDump& dump = *plan.dump;
  Json out;
  // The model's own dump has no path: it lived in a temporary file for the run.
  out["path"] = plan.generated_data ? Json(nullptr) : Json(json_text(plan.config.data.path));
  if (plan.generated_data) out["source"] = "model";
  out["bytes"] = identity.bytes;
  out["sha256"] = identity.sha256;
  out["format"] = dump.file().format();
  out["layout"] = plan.layout;
  out["dtypes"] = {{"keys", tensor_dtype(dump, Role::key)},
                   {"values", tensor_dtype(dump, Role::value)},
                   {"queries", dump.has_queries() ? Json(tensor_dtype(dump, Role::query)) : Json(nullptr)}};
  Json layers = Json::array();
  for (const KvLayerShape& shape : dump.layers()) {
    layers.push_back({{"layer", shape.layer},
                      {"seqs", shape.seqs},
                      {"kv_heads", shape.kv_heads},
                      {"q_heads", shape.q_heads},
                      {"tokens", shape.tokens},
                      {"key_dim", shape.key_dim},
                      {"value_dim", shape.value_dim}});
  }
  out["layers"] = layers;
  if (plan.config.data.nonfinite == NonfiniteMode::skip) {
    out["skipped_vectors"] = {{"keys", results.skipped_key_vectors},
                              {"values", results.skipped_value_vectors},
                              {"queries", results.skipped_query_vectors}};
  }
  return out;
}

Json bits_json(const RunBits& bits) {
  return {{"bits_k", bits.bits_k},
          {"bits_v", bits.bits_v},
          {"bits_kv", bits.bits_kv},
          {"bits_kv_effective", bits.bits_kv_effective},
          {"compression", bits.compression}};
}

Json run_json(const SweepPlan& plan, const RunResult& result) {
  const PlannedRun& run = *result.run;
  Json out;
  out["id"] = run.identity();
  out["k"] = spec_json(run.k);
  out["v"] = spec_json(run.v);
  out["window"] = run.window;
  out["sink"] = run.sink;
  add_engine_json(run, out);
  out["seeds"] = plan.config.seeds;
  out["origin"] = run.origin;
  out["bits"] = bits_json(result.bits);
  Json metrics = Json::object();
  for (const auto& [name, summary] : result.metrics) {
    metrics[name] = {{"mean", optional_number(summary.mean)},
                     {"se", optional_number(summary.standard_error)},
                     {"std", optional_number(summary.seed_std)},
                     {"per_seed", optional_numbers(summary.per_seed)}};
  }
  out["metrics"] = metrics;
  Json per_layer;
  Json layers = Json::array();
  if (plan.dump) {
    for (const KvLayerShape& shape : plan.dump->layers()) layers.push_back(shape.layer);
  } else {
    for (int layer = 0; layer < plan.model->source->config().layers; ++layer) layers.push_back(layer);
  }
  per_layer["layer"] = layers;
  for (const char* name : {"bits_k", "bits_v", "bits_kv", "bits_kv_effective"}) {
    Json values = Json::array();
    for (const RunBits& bits : result.layer_bits) values.push_back(bits_json(bits)[name]);
    per_layer[name] = values;
  }
  for (const auto& [name, values] : result.per_layer) per_layer[name] = optional_numbers(values);
  out["per_layer"] = per_layer;
  if (plan.config.metrics.per_head) {
    Json per_head;
    for (const auto& [name, table] : result.per_head) {
      Json rows = Json::array();
      for (const auto& row : table) rows.push_back(optional_numbers(row));
      per_head[name] = rows;
    }
    out["per_head"] = per_head;
  }
  return out;
}

// The model's identity, the tokens' and what the base pass measured.
void add_model_sections(const SweepModel& model, const EndToEndBase& base, Json& out) {
  const ModelConfig& config = model.source->config();
  Json files = Json::array();
  for (const WeightFileIdentity& file : model.identity.files) {
    files.push_back({{"name", json_text(file.name)}, {"bytes", file.bytes}, {"sha256", file.sha256}});
  }
  out["model"] = {{"path", json_text(model.identity.path)},
                  {"architecture", model.identity.architecture},
                  {"config_sha256", model.identity.config_sha256},
                  {"files", files},
                  {"dtype", model.source->weight_dtype()},
                  {"layers", config.layers},
                  {"q_heads", config.q_heads},
                  {"kv_heads", config.kv_heads},
                  {"head_dim", config.head_dim},
                  {"vocab_size", config.vocab_size}};
  const ModelTokens& tokens = model.tokens;
  Json source = {{"source", tokens.source}, {"path", json_text(tokens.path)}, {"sha256", tokens.sha256}};
  if (tokens.source == "text") {
    source["tokenizer"] = {{"path", json_text(tokens.tokenizer_path)}, {"sha256", tokens.tokenizer_sha256}};
    source["add_special"] = tokens.add_special;
  } else {
    source["tensor"] = tokens.tensor.empty() ? Json(nullptr) : Json(json_text(tokens.tensor));
    source["dtype"] = tokens.dtype;
  }
  source["count"] = tokens.ids.size();
  out["tokens"] = source;
  out["e2e"] = {{"ctx", model.options.ctx},
                {"chunks", model.chunks},
                {"score", scoring_name(model.options.scoring)},
                {"bos", model.options.bos},
                {"scored_tokens", base.scored_tokens},
                {"base",
                 {{"ppl", base.perplexity.value},
                  {"ppl_se", optional_number(base.perplexity.standard_error)},
                  {"nll", base.nll}}}};
}

const MetricSummary* find_metric(const RunResult& result, const std::string& name) {
  for (const auto& [metric, summary] : result.metrics) {
    if (metric == name) return &summary;
  }
  return nullptr;
}

}  // namespace

nlohmann::ordered_json sweep_results_json(const SweepPlan& plan, const SweepResults& results,
                                          const DataIdentity& identity) {
  Json out;
  out["schema"] = kSweepSchema;
  out["tqlab"] = {{"version", TQLAB_VERSION}, {"git_commit", TQLAB_GIT_COMMIT}, {"blas", blas_kernels()}};
  out["config"] = sweep_config_json(plan);
  if (plan.dump) {
    out["data"] = data_json(plan, results, plan.generated_data.value_or(identity));
    out["needle"] = {{"trials", results.needle_trials},
                     {"margins", plan.config.metrics.needle_options.margins},
                     {"synthetic_trials", results.synthetic_trials}};
    if (results.needle_trials_measured < results.needle_trials) {
      out["needle"]["unmeasured_trials"] = results.needle_trials - results.needle_trials_measured;
    }
  }
  if (plan.model) add_model_sections(*plan.model, *results.end_to_end, out);
  Json runs = Json::array();
  for (const RunResult& result : results.runs) runs.push_back(run_json(plan, result));
  out["runs"] = runs;
  out["timing"] = sweep_timing_json(results.timing, plan.model != nullptr);
  return out;
}

nlohmann::ordered_json sweep_timing_json(const SweepTiming& timing, bool model) {
  Json out = {{"total_seconds", timing.total_seconds},
              {"threads", timing.threads},
              {"worker_seconds",
               {{"read", timing.read_seconds},
                {"quantize", timing.quantize_seconds},
                {"attention", timing.attention_seconds},
                {"needle", timing.needle_seconds}}}};
  if (model) out["model_seconds"] = {{"base", timing.model_base_seconds}, {"runs", timing.model_runs_seconds}};
  return out;
}

std::string sweep_results_table(const SweepPlan& plan, const SweepResults& results) {
  const std::vector<double>& margins = plan.config.metrics.needle_options.margins;
  const std::string needle_name =
      margins.empty() ? "" : fmt::format("needle_top1@{}", margins[(margins.size() - 1) / 2]);
  std::size_t k_width = 1, v_width = 1;
  for (const RunResult& result : results.runs) {
    k_width = std::max(k_width, result.run->k.size());
    v_width = std::max(v_width, result.run->v.size());
  }
  const auto cell = [](const RunResult& result, const std::string& name, const char* format) -> std::string {
    const MetricSummary* summary = find_metric(result, name);
    if (summary == nullptr || !summary->mean) return "-";
    return fmt::format(fmt::runtime(format), *summary->mean);
  };
  // With a model block, two end-to-end columns: the perplexity change (%) and the KL divergence.
  const bool end_to_end = results.end_to_end.has_value();
  std::string table =
      fmt::format("{:<{}}  {:<{}}  {:>6}  {:>4}  {:>7}  {:>6}  {:>10}  {:>10}  {:>9}  {:>{}}", "k", k_width, "v",
                  v_width, "window", "sink", "bits_kv", "ratio", "k_rel_mse", "attn_kl", "attn_top1",
                  needle_name.empty() ? "needle" : needle_name, std::max<std::size_t>(needle_name.size(), 6));
  // Runs of an engine other than tqlab's, or another prefill rule: a last column naming them.
  const auto semantics = [](const PlannedRun& run) {
    std::string text = run.engine.empty() ? "tqlab" : run.engine;
    if (run.prefill != PrefillRule{}) text += " prefill=" + run.prefill.spelling();
    return text;
  };
  bool engine_column = false;
  for (const RunResult& result : results.runs) engine_column = engine_column || semantics(*result.run) != "tqlab";
  const auto end_row = [&](std::string cells, const std::string& engine) {
    return (engine_column ? cells + "  " + engine : cells) + "\n";
  };
  table = end_row(table + (end_to_end ? fmt::format("  {:>10}  {:>10}", "dPPL_%", "e2e_kld") : ""), "engine");
  for (const RunResult& result : results.runs) {
    table += fmt::format("{:<{}}  {:<{}}  {:>6}  {:>4}  {:>7.3f}  {:>6.2f}  {:>10}  {:>10}  {:>9}  {:>{}}",
                         result.run->k, k_width, result.run->v, v_width, result.run->window, result.run->sink,
                         result.bits.bits_kv, result.bits.compression, cell(result, "k_rel_mse", "{:.4g}"),
                         cell(result, "attn_kl", "{:.4g}"), cell(result, "attn_top1", "{:.4f}"),
                         cell(result, needle_name, "{:.3f}"), std::max<std::size_t>(needle_name.size(), 6));
    table = end_row(table + (end_to_end ? fmt::format("  {:>10}  {:>10}", cell(result, "e2e_ppl_delta_pct", "{:+.3f}"),
                                                      cell(result, "e2e_kld", "{:.4g}"))
                                        : ""),
                    semantics(*result.run));
  }
  return table;
}

}  // namespace tqlab
