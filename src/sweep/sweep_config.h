// The sweep config (docs/SWEEP.md#config): which dump, which
// grid of quantizer runs, which metrics, which seeds, where the results go.
//
//   {"name": "k-vs-v-3bit",
//    "data": {"path": "../data/sample_kv.safetensors", "keys": "layers.{layer}.k",
//             "values": "layers.{layer}.v", "queries": "layers.{layer}.q",
//             "layout": "seq head token dim", "layers": "all", "nonfinite": "error"},
//    "grid": {"k": ["tq:b=3,nc", "tq:b=4,nc"], "v": ["tq:b=3,nc"], "window": [0, 128], "sink": [0]},
//    "runs": [{"k": "tq:b=8", "v": "tq:b=4"},
//             {"k": {"default": "tq:b=3", "layers": {"0": "tq:b=5"}}, "v": "tq:b=3"},
//             {"allocation": "alloc.json", "window": 0}],
//    "metrics": {"reconstruction": true,
//                "attention": {"chunk": 2048, "causal": true, "scale": "1/sqrt(d)", "window_mode": "recent"},
//                "needle": {"trials": 256, "margins": [0.5, 1, 2, 4], "synth_trials": 40},
//                "per_head": false},
//    "seeds": [0, 1, 2],
//    "out": "../results/k-vs-v-3bit.json"}
//
// Parsing validates every key before any work and names the key path of
// whatever is wrong ("grid.k[2]"); relative paths resolve against the
// config file's folder. Checks that need the data (a spec that cannot take
// the head dim, runs with the same identity) are in sweep_plan.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/engine.h"
#include "kv/kv_dump.h"
#include "kv/layered_spec.h"
#include "metrics/attention_geometry.h"
#include "metrics/needle.h"
#include "model/scoring.h"

namespace tqlab {

enum class NonfiniteMode {
  error,  ///< NaN/Inf in K, V or Q is an error naming tensor and index
  skip,   ///< such vectors are left out (and counted)
};
inline constexpr auto kNonfiniteModeNames =
    make_name_table<NonfiniteMode>({{NonfiniteMode::error, "error"}, {NonfiniteMode::skip, "skip"}});

std::string_view nonfinite_mode_name(NonfiniteMode mode);

/// One run as the config asks for it.
struct SweepRunConfig {
  LayeredSpec k;
  LayeredSpec v;
  int window = 0;  ///< tokens kept exact (keys and values), see WindowMode
  int sink = 0;    ///< the first `sink` tokens of each sequence kept exact
  std::string origin;  ///< "grid (k[0], v[1], window[0], sink[0])" or "runs[3]", for messages
  std::string engine;  ///< canonical engine spelling (engine/engine.h); "" until the model block's default is applied
  std::optional<PrefillRule> prefill;  ///< unset: the model block's, else the engine's default
};

struct MetricsConfig {
  bool reconstruction = true;
  bool attention = true;
  bool needle = true;
  AttentionConfig attention_options;
  NeedleConfig needle_options;
  bool per_head = false;  ///< add per-head breakdowns
};

struct SweepDataConfig {
  std::string path;           ///< as written in the config (or given by --data)
  std::string resolved_path;  ///< the file to open
  KvDumpSpec kv;              ///< templates and layers; kv.layout "" = the file's metadata
  NonfiniteMode nonfinite = NonfiniteMode::error;
};

/// "model": an end-to-end measurement through a Hugging Face checkpoint (docs/SWEEP.md#model).
/// Every run then also gets the e2e_* metrics; without "data", the offline metrics are computed
/// on the Q/K/V the model itself produces for the tokens (what `tqlab dump --dtype f32` writes).
struct SweepModelConfig {
  std::string path, resolved_path;      ///< the checkpoint folder, as written and resolved
  std::string tokens, resolved_tokens;  ///< "FILE.npy" or "FILE.safetensors:NAME" ("" with text)
  std::string text, resolved_text;      ///< a text tokenized with the model's tokenizer.json ("" with tokens)
  std::string tokenizer, resolved_tokenizer;  ///< "tokenizer": another tokenizer.json (default: the model's)
  std::optional<bool> add_special;      ///< with text: add the tokenizer's special tokens (default: its own)
  int ctx = 512;
  int chunks = 0;                       ///< 0: every whole chunk of the tokens
  Scoring score = Scoring::second_half;  ///< which predictions of a chunk are scored
  bool bos = false;                     ///< replace each chunk's first token by the config's bos_token_id
  bool from_flags = false;              ///< given as tqlab ppl's flags: messages name --ctx, not model.ctx
  std::string engine = "tqlab";         ///< the runs' engine unless a run names its own (canonical)
  /// The runs' prefill unless a run names its own; unset: each run's engine's default
  /// (Engine::default_prefill: "quantized", or vLLM's one prefill of each chunk).
  std::optional<PrefillRule> prefill;
};

struct SweepConfig {
  std::string config_path;  ///< the file it was read from
  std::string name;
  SweepDataConfig data;  ///< data.path "" when a model block stands in for the data
  std::optional<SweepModelConfig> model;
  std::vector<SweepRunConfig> runs;  ///< the grid's product (k, v, window, sink order), then `runs`
  MetricsConfig metrics;
  std::vector<std::uint64_t> seeds{0};
  std::string out;  ///< resolved output path; "" when neither config nor --out gives one
};

/// Reads and validates `path`. InputError names the file and the key path. `require_runs` false: a
/// config without "grid" and "runs" is valid (tqlab allocate chooses the runs itself).
SweepConfig load_sweep_config(const std::string& path, bool require_runs = true);

/// Validates an already parsed document as if read from `path`.
SweepConfig parse_sweep_config(const nlohmann::json& document, const std::string& path, bool require_runs = true);

/// The layer selection as the config writes it, for the results: the layer list
/// actually used is recorded in the data section.
std::string describe_layers(const std::optional<std::vector<int>>& layers);

/// What the sweep reads, for messages: "'DATA'" (data.path as written), or without a data file
/// "model 'M' on text 'T'" / "model 'M' on tokens 'T'" (the model block's own inputs).
std::string describe_sweep_inputs(const SweepConfig& config);

}  // namespace tqlab
