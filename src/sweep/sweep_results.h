// The sweep's results document (schema tqlab.sweep/1) and its summary table.
//
// {"schema": "tqlab.sweep/1",
//  "tqlab": {"version", "git_commit"},
//  "config": the resolved config, itself a valid config that reproduces the
//            results: name, data, runs (every run, explicit), metrics with
//            their defaults, seeds;
//  "data": the input's identity: path, bytes, sha256, format, layout, dtypes,
//          per-layer shapes, nonfinite vectors skipped;
//  "needle": trials placed, margins, synthetic trials;
//  "runs": [{"id", "k", "v", "window", "sink", "seeds", "origin",
//            "bits": {bits_k, bits_v, bits_kv, bits_kv_effective, compression},
//            "metrics": {NAME: {"mean", "se", "std", "per_seed": [...]}},
//            "per_layer": {"layer": [...], "bits_k": [...], ..., NAME: [...]},
//            "per_head": {NAME: [[per head] per layer]}  (with metrics.per_head)}],
//  "timing": {...}}
// Keys are in a fixed order and numbers are printed with 17 significant
// digits, so the same config and seeds give the same bytes outside "timing".
// A value that could not be measured is null.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sweep/sweep.h"
#include "sweep/sweep_config_json.h"

namespace tqlab {

/// The "timing" section: {"total_seconds", "threads", "worker_seconds": {"read", "quantize",
/// "attention", "needle"}} and, for a sweep with a model block, "model_seconds": {"base", "runs"}.
nlohmann::ordered_json sweep_timing_json(const SweepTiming& timing, bool model);

/// The whole results document.
nlohmann::ordered_json sweep_results_json(const SweepPlan& plan, const SweepResults& results,
                                          const DataIdentity& identity);

/// One row per run: k, v, window, sink, bits_kv, compression, k_rel_mse,
/// attn_kl, attn_top1, needle_top1 at the middle margin.
std::string sweep_results_table(const SweepPlan& plan, const SweepResults& results);

}  // namespace tqlab
