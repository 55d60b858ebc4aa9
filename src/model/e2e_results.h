// The results document of `tqlab ppl`: a tqlab.sweep/1 document (the shape
// sweep/sweep_results.h writes) whose runs carry the end-to-end metrics, and
// whose header says what was measured: the model's identity (architecture,
// config.json's sha256, each weight file's size and sha256), the tokens'
// identity, ctx, chunks, scoring, the scored-token count and the base
// perplexity.
//
// {"schema": "tqlab.sweep/1",
//  "tqlab": {"version", "git_commit", "blas"},
//  "config": {"name", "model": {"path", "tokens", "ctx", "chunks", "score", "bos"},
//             "runs": [{"k", "v", "window", "sink"}], "metrics": {"e2e": {"window_mode"}}, "seeds"},
//  "model": {"path", "architecture", "config_sha256", "files": [{"name", "bytes", "sha256"}],
//            "dtype", "layers", "q_heads", "kv_heads", "head_dim", "vocab_size"},
//  "tokens": {"path", "tensor", "dtype", "count", "sha256"},
//  "e2e": {"ctx", "chunks", "score", "bos", "scored_tokens", "base": {"ppl", "ppl_se", "nll"}},
//  "runs": [{"id", "k", "v", "window", "sink", "seeds", "origin", "bits": {...},
//            "metrics": {"e2e_ppl": {"mean", "se", "std", "per_seed"}, ...},
//            "per_layer": {"layer", "bits_k", "bits_v", "bits_kv", "bits_kv_effective"}}],
//  "timing": {"total_seconds", "base_seconds", "threads", "tokens_per_second"}}
// With several seeds a metric's mean is the mean of its per-seed values, std
// their sample standard deviation (null with one seed), and se the standard
// error of the metric computed on the seed-averaged per-token values
// (metrics/next_token_metrics.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kv/layered_spec.h"
#include "metrics/attention_geometry.h"
#include "model/checkpoint.h"
#include "model/end_to_end.h"
#include "model/token_file.h"

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
ModelIdentity model_identity(const Checkpoint& checkpoint, const std::string& path_as_given);

/// One run of the document, with each seed's result (in `seeds` order).
struct E2eRun {
  std::string k, v;  ///< canonical specs
  int window = 0;
  int sink = 0;
  std::vector<std::uint64_t> seeds;
  std::string origin;  ///< "--k/--v"
  std::vector<RunSeedResult> results;
};

struct E2eDocumentInput {
  std::string name = "ppl";
  ModelIdentity model;
  const Checkpoint* checkpoint = nullptr;
  std::string tokens_as_given;
  TokenIds tokens;
  std::string tokens_sha256;
  const EndToEndSession* session = nullptr;
  EndToEndOptions options;
  WindowMode window_mode = WindowMode::recent;
  std::vector<E2eRun> runs;
  double total_seconds = 0, base_seconds = 0;
  int threads = 1;
};

nlohmann::ordered_json e2e_results_json(const E2eDocumentInput& input);

/// The metrics of a run over its seeds, in next_token_metric_names() order:
/// (name, mean, se, std, per-seed values).
struct E2eMetricSummary {
  std::string name;
  double mean = 0;
  std::optional<double> se, std;
  std::vector<double> per_seed;
};
std::vector<E2eMetricSummary> summarize_seeds(const std::vector<RunSeedResult>& results);

}  // namespace tqlab
