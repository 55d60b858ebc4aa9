// The "config" section of a sweep's documents (results, shards): the resolved
// config, itself a valid config that reproduces the results when read from
// where the document is written (plan.config.out). sweep_config.h reads a
// config; this prints one back, so the two change together.
//
// Paths are written as the user gave them: relative to the document's folder,
// or absolute when the config or --data gave an absolute path.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sweep/sweep_plan.h"

namespace tqlab {

/// The "config" section of `plan`'s documents.
nlohmann::ordered_json sweep_config_json(const SweepPlan& plan);

/// A canonical K/V spec as the config writes it: a string, or the per-layer object.
nlohmann::ordered_json spec_json(const std::string& canonical);

/// Adds a run's "engine" and "prefill" to `out` (a run's object in the config or the results),
/// each only when it is not the default (tqlab, quantized).
void add_engine_json(const PlannedRun& run, nlohmann::ordered_json& out);

/// A path of the config (`written`, resolved to `resolved`) as a document written to
/// `out` records it: relative to the output's folder, or absolute when `written` is.
std::string path_for_document(const std::string& written, const std::string& resolved, const std::string& out);

}  // namespace tqlab
