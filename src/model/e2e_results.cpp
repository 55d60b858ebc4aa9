#include "model/e2e_results.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/parallel.h"
#include "core/sha256.h"
#include "core/text.h"
#include "results/results_document.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

Json optional_number(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

Json spec_json(const std::string& canonical) {
  return canonical.starts_with("{") ? Json::parse(canonical) : Json(canonical);
}

struct Bits {
  double k = 0, v = 0, kv = 0, effective = 0;
};

// Bits per value from the packed bytes of the first seed (every seed packs the same sizes);
// window and sink tokens at 16 bits in the effective figure, as the sweep counts them.
Bits bits_of(const KvCacheBytes& bytes, std::size_t first, std::size_t last, double exact_share) {
  double key_bytes = 0, value_bytes = 0, key_values = 0, value_values = 0;
  for (std::size_t l = first; l < last; ++l) {
    key_bytes += static_cast<double>(bytes.key[l]);
    value_bytes += static_cast<double>(bytes.value[l]);
    key_values += static_cast<double>(bytes.key_values[l]);
    value_values += static_cast<double>(bytes.value_values[l]);
  }
  Bits out;
  out.k = 8 * key_bytes / key_values;
  out.v = 8 * value_bytes / value_values;
  out.kv = 8 * (key_bytes + value_bytes) / (key_values + value_values);
  out.effective = ((1 - exact_share) * 8 * (key_bytes + value_bytes) + exact_share * 16 * (key_values + value_values)) /
                  (key_values + value_values);
  return out;
}

Json bits_json(const Bits& bits) {
  return {{"bits_k", bits.k},
          {"bits_v", bits.v},
          {"bits_kv", bits.kv},
          {"bits_kv_effective", bits.effective},
          {"compression", 16 / bits.kv}};
}

}  // namespace

ModelIdentity model_identity(const Checkpoint& checkpoint, const std::string& path_as_given) {
  ModelIdentity out;
  out.path = path_as_given;
  out.architecture = checkpoint.config().architecture;
  out.config_sha256 = file_sha256(checkpoint.config().path);
  for (const WeightFile& file : checkpoint.files())
    out.files.push_back({file.name, file.bytes, file_sha256(file.path)});
  return out;
}

std::vector<E2eMetricSummary> summarize_seeds(const std::vector<RunSeedResult>& results) {
  std::vector<NextTokenSeries> series;
  std::vector<std::vector<std::pair<std::string, Estimate>>> per_seed;
  for (const RunSeedResult& result : results) {
    series.push_back(result.series);
    per_seed.push_back(next_token_metrics(result.series));
  }
  const auto averaged = next_token_metrics(average_series(series));
  std::vector<E2eMetricSummary> out;
  for (std::size_t m = 0; m < averaged.size(); ++m) {
    E2eMetricSummary summary;
    summary.name = averaged[m].first;
    double sum = 0;
    for (const auto& seed : per_seed) {
      summary.per_seed.push_back(seed[m].second.value);
      sum += seed[m].second.value;
    }
    const double count = static_cast<double>(per_seed.size());
    summary.mean = sum / count;
    summary.se = averaged[m].second.standard_error;
    if (per_seed.size() > 1) {
      double squares = 0;
      for (double value : summary.per_seed) squares += (value - summary.mean) * (value - summary.mean);
      summary.std = std::sqrt(squares / (count - 1));
    }
    out.push_back(std::move(summary));
  }
  return out;
}

nlohmann::ordered_json e2e_results_json(const E2eDocumentInput& input) {
  const EndToEndSession& session = *input.session;
  const ModelConfig& config = input.checkpoint->config();
  Json out;
  out["schema"] = kSweepSchema;
  out["tqlab"] = {{"version", TQLAB_VERSION}, {"git_commit", TQLAB_GIT_COMMIT}, {"blas", blas_kernels()}};

  Json runs_config = Json::array();
  for (const E2eRun& run : input.runs) {
    runs_config.push_back(
        {{"k", spec_json(run.k)}, {"v", spec_json(run.v)}, {"window", run.window}, {"sink", run.sink}});
  }
  std::vector<std::uint64_t> seeds = input.runs.empty() ? std::vector<std::uint64_t>{} : input.runs.front().seeds;
  out["config"] = {{"name", input.name},
                   {"model",
                    {{"path", json_text(input.model.path)},
                     {"tokens", json_text(input.tokens_as_given)},
                     {"ctx", session.ctx()},
                     {"chunks", session.chunks()},
                     {"score", scoring_name(input.options.scoring)},
                     {"bos", input.options.bos}}},
                   {"runs", runs_config},
                   {"metrics", {{"e2e", {{"window_mode", std::string(window_mode_name(input.window_mode))}}}}},
                   {"seeds", seeds}};

  Json files = Json::array();
  for (const WeightFileIdentity& file : input.model.files) {
    files.push_back({{"name", json_text(file.name)}, {"bytes", file.bytes}, {"sha256", file.sha256}});
  }
  out["model"] = {{"path", json_text(input.model.path)},
                  {"architecture", input.model.architecture},
                  {"config_sha256", input.model.config_sha256},
                  {"files", files},
                  {"dtype", input.checkpoint->weight_dtype()},
                  {"layers", config.layers},
                  {"q_heads", config.q_heads},
                  {"kv_heads", config.kv_heads},
                  {"head_dim", config.head_dim},
                  {"vocab_size", config.vocab_size}};
  out["tokens"] = {{"path", json_text(input.tokens.path)},
                   {"tensor", input.tokens.tensor.empty() ? Json(nullptr) : Json(json_text(input.tokens.tensor))},
                   {"dtype", input.tokens.dtype},
                   {"count", input.tokens.ids.size()},
                   {"sha256", input.tokens_sha256}};
  const BaseResult& base = session.base();
  out["e2e"] = {{"ctx", session.ctx()},
                {"chunks", session.chunks()},
                {"score", scoring_name(input.options.scoring)},
                {"bos", input.options.bos},
                {"scored_tokens", session.scored_tokens()},
                {"base", {{"ppl", base.perplexity.value}, {"ppl_se", optional_number(base.perplexity.standard_error)},
                          {"nll", std::log(base.perplexity.value)}}}};

  Json runs = Json::array();
  for (const E2eRun& run : input.runs) {
    // A cache filled by one prefill of each chunk holds its sinks and last W tokens exact (recent and tail alike).
    const ExactTokens exact{run.sink, run.window, input.window_mode};
    const double share = static_cast<double>(exact.cached_exact_tokens(session.ctx(), session.ctx())) / session.ctx();
    const KvCacheBytes& bytes = run.results.front().bytes;
    Json entry;
    entry["id"] = fmt::format("k={} v={} window={} sink={}", run.k, run.v, run.window, run.sink);
    entry["k"] = spec_json(run.k);
    entry["v"] = spec_json(run.v);
    entry["window"] = run.window;
    entry["sink"] = run.sink;
    entry["seeds"] = run.seeds;
    entry["origin"] = run.origin;
    entry["bits"] = bits_json(bits_of(bytes, 0, bytes.key.size(), share));
    Json metrics = Json::object();
    for (const E2eMetricSummary& summary : summarize_seeds(run.results)) {
      metrics[summary.name] = {{"mean", summary.mean},
                               {"se", optional_number(summary.se)},
                               {"std", optional_number(summary.std)},
                               {"per_seed", summary.per_seed}};
    }
    entry["metrics"] = metrics;
    Json per_layer;
    Json layers = Json::array();
    for (int layer = 0; layer < config.layers; ++layer) layers.push_back(layer);
    per_layer["layer"] = layers;
    for (const char* name : {"bits_k", "bits_v", "bits_kv", "bits_kv_effective"}) {
      Json values = Json::array();
      for (std::size_t l = 0; l < bytes.key.size(); ++l)
        values.push_back(bits_json(bits_of(bytes, l, l + 1, share))[name]);
      per_layer[name] = values;
    }
    entry["per_layer"] = per_layer;
    runs.push_back(entry);
  }
  out["runs"] = runs;
  const double run_tokens =
      static_cast<double>(session.chunks()) * session.ctx() *
      static_cast<double>(1 + (input.runs.empty() ? 0 : input.runs.size() * input.runs.front().seeds.size()));
  out["timing"] = {{"total_seconds", input.total_seconds},
                   {"base_seconds", input.base_seconds},
                   {"threads", input.threads},
                   {"tokens_per_second", input.total_seconds > 0 ? run_tokens / input.total_seconds : 0.0}};
  return out;
}

}  // namespace tqlab
