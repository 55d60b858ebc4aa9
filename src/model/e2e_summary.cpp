#include "model/e2e_summary.h"

#include <cmath>

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

std::vector<E2eMetricSummary> summarize_seeds(const std::vector<RunSeedResult>& results) {
  std::vector<NextTokenSeries> series;
  std::vector<std::vector<std::pair<std::string, ValueAndError>>> per_seed;
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

}  // namespace tqlab
