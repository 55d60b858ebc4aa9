// One metric of one run over its seeds, as every results document records it
// (sweep summaries, `tqlab ppl`, allocate --verify): the mean of the per-seed
// values, their sample standard deviation, and the metric's standard error.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tqlab {

struct MetricSummary {
  std::optional<double> mean;            ///< mean over seeds (null: nothing measured)
  std::optional<double> standard_error;  ///< of the seed-averaged values (cluster-robust offline; over tokens e2e)
  std::optional<double> seed_std;        ///< sample std over seeds (null with one seed)
  std::vector<std::optional<double>> per_seed;
};

/// Metrics by name, in the order results write them.
using NamedSummaries = std::vector<std::pair<std::string, MetricSummary>>;

/// Over `values`, one per seed (at least one): their mean, and their sample standard
/// deviation (divided by n - 1) when there are two or more.
struct SeedSpread {
  double mean = 0;
  std::optional<double> std;
};
SeedSpread seed_spread(std::span<const double> values);

}  // namespace tqlab
