// A tqlab.sweep/1 results document (sweep/sweep_results.h, docs/SWEEP.md) read
// back into typed runs, for `tqlab report`: each run's identity, its bits and
// its metrics' mean, standard error and seed standard deviation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tqlab {

/// One value of a run: a metric's summary, or a bits entry (no se, no std).
struct RunValue {
  std::optional<double> mean;  ///< null in the file: nullopt
  std::optional<double> se;    ///< cluster standard error of the mean
  std::optional<double> std;   ///< sample standard deviation over the seeds (null with one seed)
};

struct ResultsRun {
  std::string id;              ///< "k=tq:b=3 v=tq:b=3 window=0 sink=0"
  std::string k, v;            ///< canonical specs; a per-layer spec as its compact JSON
  std::int64_t window = 0;
  std::int64_t sink = 0;
  std::string engine = "tqlab";     ///< "engine" (absent: tqlab)
  std::string prefill = "quantized";  ///< "prefill" (absent: quantized)
  std::vector<std::uint64_t> seeds;
  /// The "bits" entries (bits_k, bits_v, bits_kv, bits_kv_effective, compression),
  /// then the "metrics", each in document order.
  std::vector<std::pair<std::string, RunValue>> values;

  /// The value named `name`, or nullptr.
  const RunValue* find(std::string_view name) const;
};

struct SweepResultsFile {
  std::string path;
  std::string name;            ///< config.name
  std::vector<ResultsRun> runs;  ///< in document (config) order
  std::vector<std::string> bits_names;  ///< the names of "bits" entries (the first runs' order)

  /// Every value name some run has, bits first, in first-seen order.
  std::vector<std::string> value_names() const;
  /// The needle_top1 metric at the middle margin (the lower middle of an even
  /// count), as the sweep's summary table shows it; "" when there is none.
  std::string middle_needle_metric() const;
};

/// Reads `path`: InputError "results 'PATH': ..." when it is not a tqlab.sweep/1
/// document (naming the schema it is) or a run lacks a key it needs (naming its path).
SweepResultsFile read_sweep_results(const std::string& path);

}  // namespace tqlab
