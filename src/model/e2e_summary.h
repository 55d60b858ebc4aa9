// What results record of an end-to-end measurement (the sweep's model block,
// sweep/sweep_model.h, and `tqlab ppl`): the model's identity (architecture,
// config.json's sha256, each weight file's size and sha256), and a run's
// e2e_* metrics over its seeds. With several seeds a metric's mean is the mean
// of its per-seed values, std their sample standard deviation (null with one
// seed), and se the standard error of the metric computed on the seed-averaged
// per-token values (metrics/next_token_metrics.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/metric_summary.h"
#include "model/end_to_end.h"
#include "model/weight_source.h"

namespace tqlab {

struct WeightFileIdentity {
  std::string name;
  std::uint64_t bytes = 0;
  std::string sha256;
};

struct ModelIdentity {
  std::string path;  ///< as given
  std::string architecture;
  std::string config_sha256;
  std::vector<WeightFileIdentity> files;
};

/// Reads every file once for its sha256.
ModelIdentity model_identity(const WeightSource& source, const std::string& path_as_given);

/// The metrics of a run over its seeds, in next_token_metric_names() order.
NamedSummaries summarize_seeds(const std::vector<RunSeedResult>& results);

}  // namespace tqlab
