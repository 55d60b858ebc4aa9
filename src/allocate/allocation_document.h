// The allocation document (schema tqlab.allocation/1) and the table `tqlab allocate` prints.
//
// {"schema": "tqlab.allocation/1", "tqlab": {"version", "git_commit"}, "config": the config file,
//  "budget": {"given", "bits", "bytes"}, "granularity": "layer" | "layer-head",
//  "objective": {"profile": "offline" | "model", "damage": what a unit's damage is,
//                "key_metric", "key_weight" (offline)},
//  "solver": {"method": "dp" | "lagrangian", "lower_bound", "gap": damage - lower_bound},
//  "allocation": {"bits", "bytes", "damage", "predicted": {METRIC: value},
//                 "units": [{"unit", "spec", "bits"}], "run": {"k", "v"}},
//  "compared": [{"name": "uniform SPEC" | "boundary", "bits", "bytes", "damage", "predicted", "run"}],
//  "frontier": [{"bits", "damage", "lower_bound"}], "uniform": [{"spec", "bits", "damage"}],
//  "calibration": {"key_metric", "key_weight", "scale", "pairs", "log_rms", "rank_correlation",
//                  "agreement": [{"name", "key_weight", "same_choice_share", "mean_abs_bits_difference",
//                                 "model_damage", "model_optimum"}]}           (with --calibrate)
//  "engine": {"name", "shape", "invocation", "best", "measured_as", "plans"}     (with --engine)
//  "same_bits": {"rows": [{"name", "bits", "bytes", "damage", "predicted", "run", "label", "kind",
//                          "granularity", "fits"}], "engine_on_other": {"granularity", "damage", "predicted"},
//                "optimum_damage_saved": {NAME: 1 - damage / engine's, both by NAME's profile}}
//  "verify": {"seeds", "base": {"ppl", "ppl_se"} | null,
//             "runs": [{"names", "id", "bits", "metrics": {METRIC: {"mean", "se", "std", "per_seed"}},
//                       "ratio": {METRIC: measured mean / predicted}}]}         (with --verify)
//  "profile": allocate/profile_json.h, with each candidate's damage,
//  "cache": {"path", "hit"},
//  "timing": {"total_seconds", "profile_seconds", "verify_seconds"}}
// "run" objects are a sweep run's k and v (docs/SWEEP.md#config): `"runs": [{"allocation": F}]`
// in a sweep config measures the allocation's. Numbers have 17 significant digits; nothing but
// "timing", "profile.seconds" and "cache" varies between identical invocations.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "allocate/agreement.h"
#include "allocate/allocation.h"
#include "allocate/engine_shapes.h"
#include "allocate/same_bits.h"
#include "allocate/verify.h"

namespace tqlab {

struct CalibrationReport {
  KeyMetric key_metric = KeyMetric::out_err;
  Calibration fit;
  std::vector<ProfileAgreement> agreement;  ///< offline allocations against the model profile's
};

struct AllocationReport {
  std::string config_path;
  Profile profile;  ///< the profile solved
  AllocationResult result;
  std::optional<CalibrationReport> calibration;
  std::optional<Verification> verification;
  std::optional<EngineAllocation> engine;  ///< with --engine: the plans the engine can run
  std::optional<SameBits> same_bits;       ///< with --engine: the rows side by side at the budget
  std::string cache_path;
  bool cache_hit = false;
  double total_seconds = 0, profile_seconds = 0;
};

/// The choices --verify measures: the allocation, the uniform choice nearest below the budget,
/// the boundary rule (those that exist), in that order.
std::vector<const ScoredChoice*> verified_choices(const AllocationResult& result);

nlohmann::ordered_json allocation_json(const AllocationReport& report);

/// The file engine_loader_file names, for the engine's best plan (a layer map's hf_quant_config.json,
/// allocate/modelopt_kv_config.h). InternalError when the best plan has none.
nlohmann::ordered_json engine_loader_config(const EngineAllocation& engine);

/// The unit map (bits per value of each unit's choice: a row per layer, a column per role and
/// head) and one row per choice: bits, predicted damage and metrics, and with --verify the
/// measured ones with their spread over seeds and measured / predicted; with --engine the engine's
/// best plan and its flags, and the rows at the same bits (allocate/same_bits.h).
std::string allocation_table(const AllocationReport& report);

}  // namespace tqlab
