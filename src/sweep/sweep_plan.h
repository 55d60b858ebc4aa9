// A sweep config checked against its data: the dump opened and validated,
// every spec built once and checked against the head dims it will meet, run
// identities made canonical and checked for duplicates, metric families
// reconciled with what the data holds (no queries: no attention). Everything
// here happens before any tensor data is read, so a mistake costs nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/tensor_file.h"
#include "kv/kv_dump.h"
#include "metrics/attention_geometry.h"
#include "metrics/needle.h"
#include "quant/quantizer.h"
#include "sweep/sweep_config.h"

namespace tqlab {

/// The head dim of the numpy reproduction's synthetic needle test.
inline constexpr int kSyntheticNeedleDim = 128;

/// One run, resolved for the data.
struct PlannedRun {
  std::string k;       ///< canonical K spec (a spec, or {"default":..,"layers":..} for per-layer specs)
  std::string v;       ///< canonical V spec
  int window = 0;
  int sink = 0;
  std::string origin;  ///< where the config asked for it
  /// Quantizer (index into SweepPlan::quantizers) per [layer index][kv head], for K and V.
  std::vector<std::vector<int>> k_quantizer, v_quantizer;
  /// The K quantizer of the synthetic needle test (the default K spec at head dim
  /// 128), or -1 when that spec cannot take 128 values.
  int synthetic_needle_quantizer = -1;

  ExactTokens exact(WindowMode mode) const { return {sink, window, mode}; }
  /// "k=tq:b=3 v=tq:b=3 window=0 sink=0": what identifies a run within a sweep.
  std::string identity() const;
};

struct SweepPlan {
  SweepConfig config;
  std::unique_ptr<TensorFile> file;
  std::unique_ptr<KvDump> dump;
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

/// Opens the data and validates the config against it. InputError names the
/// config key (grid.k[2]) or the file and tensor.
SweepPlan plan_sweep(SweepConfig config);

/// Logit scale of a layer: the configured number, else 1/sqrt(key head dim).
double attention_scale(const AttentionConfig& attention, int key_dim);

}  // namespace tqlab
