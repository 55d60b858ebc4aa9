// A sweep config checked against its data: the dump opened and validated,
// every spec built once and checked against the head dims it will meet, run
// identities made canonical and checked for duplicates, metric families
// reconciled with what the data holds (no queries: no attention). Everything
// here happens before any tensor data is read, so a mistake costs nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/tensor_file.h"
#include "kv/kv_dump.h"
#include "metrics/attention_geometry.h"
#include "metrics/needle.h"
#include "quant/quantizer.h"
#include "sweep/sweep_config.h"
#include "sweep/sweep_model.h"

namespace tqlab {

/// The head dim of the numpy reproduction's synthetic needle test.
inline constexpr int kSyntheticNeedleDim = 128;

/// One run, resolved for the data.
struct PlannedRun {
  std::string k;       ///< canonical K spec (a spec, or {"default":..,"layers":..} for per-layer specs)
  std::string v;       ///< canonical V spec
  int window = 0;
  int sink = 0;
  std::string engine = "tqlab";  ///< canonical engine spelling (engine/engine.h)
  PrefillRule prefill;
  std::string origin;  ///< where the config asked for it
  /// Quantizer (index into SweepPlan::quantizers) per [layer index][kv head], for K and V.
  std::vector<std::vector<int>> k_quantizer, v_quantizer;
  /// The K quantizer of the synthetic needle test (the default K spec at head dim
  /// 128), or -1 when that spec cannot take 128 values.
  int synthetic_needle_quantizer = -1;

  ExactTokens exact(WindowMode mode) const { return {sink, window, mode}; }
  /// "k=tq:b=3 v=tq:b=3 window=0 sink=0": what identifies a run within a sweep; a run with
  /// another engine or prefill than the default adds " engine=llama.cpp prefill=exact 64".
  std::string identity() const;
};

/// What identifies a sweep's input file: its size and contents.
struct DataIdentity {
  std::uint64_t bytes = 0;
  std::string sha256;

  bool operator==(const DataIdentity&) const = default;
};

struct SweepPlan {
  SweepConfig config;
  std::unique_ptr<SweepModel> model;   ///< the model block's checkpoint, tokens and runs (null without one)
  std::unique_ptr<TensorFile> file;    ///< the data; null when a model block asks for no offline metric
  std::unique_ptr<KvDump> dump;        ///< null with `file`
  /// Set when the dump is the model's own (no "data"): its identity, known once written.
  std::optional<DataIdentity> generated_data;
  std::string layout;                                   ///< the layout used
  std::vector<std::unique_ptr<Quantizer>> quantizers;  ///< one per distinct spec string
  std::vector<std::string> quantizer_specs;            ///< the spec each was built from
  std::vector<PlannedRun> runs;
  bool reconstruction = false;
  bool attention = false;         ///< requested and the dump has queries
  bool needle = false;            ///< the planted-needle test on the dump (needs queries)
  bool synthetic_needle = false;  ///< the numpy reproduction's synthetic test
  std::vector<NeedleTrial> needle_trials;  ///< the planted-needle trials (needle.h), placed once for every run
  std::vector<std::string> warnings;  ///< said once, before the work starts
};

struct PlanOptions {
  int threads = 0;  ///< for the model's forward when it makes the dump (0: every core)
};

/// Opens the data (and the model) and validates the config against them.
/// InputError names the config key (grid.k[2]) or the file and tensor. With a
/// model block and no data, this runs the model once over the tokens to make
/// the dump the offline metrics read (sweep/sweep_model.h), after every check.
SweepPlan plan_sweep(SweepConfig config, const PlanOptions& options = {});

/// Whether the config asks for a metric computed on K/V tensors (reconstruction,
/// attention, needle), as opposed to the model block's end-to-end metrics only.
bool wants_offline_metrics(const MetricsConfig& metrics);

/// The synthetic needle trials a plan measures (0 when the test is off).
int synthetic_trial_count(const SweepPlan& plan);

/// Logit scale of a layer: the configured number, else 1/sqrt(key head dim).
double attention_scale(const AttentionConfig& attention, int key_dim);

}  // namespace tqlab
