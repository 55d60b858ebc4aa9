#include "model/e2e_summary.h"

#include "core/sha256.h"

namespace tqlab {

ModelIdentity model_identity(const WeightSource& source, const std::string& path_as_given) {
  ModelIdentity out;
  out.path = path_as_given;
  out.architecture = source.config().architecture;
  for (const SourceFile& file : source.files()) {
    out.files.push_back({file.name, file.bytes, file_sha256(file.path)});
    // A GGUF holds its config: its one hash serves both.
    if (file.path == source.config_path()) out.config_sha256 = out.files.back().sha256;
  }
  if (out.config_sha256.empty()) out.config_sha256 = file_sha256(source.config_path());
  return out;
}

NamedSummaries summarize_seeds(const std::vector<RunSeedResult>& results) {
  std::vector<NextTokenSeries> series;
  std::vector<std::vector<std::pair<std::string, ValueAndError>>> per_seed;
  for (const RunSeedResult& result : results) {
    series.push_back(result.series);
    per_seed.push_back(next_token_metrics(result.series));
  }
  const auto averaged = next_token_metrics(average_series(series));
  NamedSummaries out;
  for (std::size_t m = 0; m < averaged.size(); ++m) {
    std::vector<double> values;
    for (const auto& seed : per_seed) values.push_back(seed[m].second.value);
    const SeedSpread spread = seed_spread(values);
    MetricSummary summary;
    summary.mean = spread.mean;
    summary.seed_std = spread.std;
    summary.standard_error = averaged[m].second.standard_error;
    summary.per_seed.assign(values.begin(), values.end());
    out.emplace_back(averaged[m].first, std::move(summary));
  }
  return out;
}

}  // namespace tqlab
