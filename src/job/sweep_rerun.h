// Re-running a result: `tqlab sweep --config RESULTS.json` takes the config a
// tqlab.sweep/1 document carries (its "config" section, a config read as if
// it lived where the document does: sweep_identity.h) and runs that very
// sweep again, so that `tqlab diff RESULTS.json NEW.json` finds no difference.
// The runs keep the origins the results recorded ("grid (k[0], ...)").
#pragma once

#include <string>
#include <vector>

#include "sweep/sweep_config.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_results.h"

namespace tqlab {

/// A config as read from a config file, or from a results document.
struct SweepConfigSource {
  SweepConfig config;
  bool from_results = false;
  // What the results recorded (from_results only):
  std::vector<std::string> origins;  ///< per run
  DataIdentity data;
  std::string version, git_commit;
};

/// Reads `path`: a sweep config, or a tqlab.sweep/1 results document.
/// InputError naming the file (and the key path) otherwise; a tqlab.shard/1
/// document is refused with the hint to merge it.
SweepConfigSource load_sweep_config_source(const std::string& path);

/// Gives the plan's runs the origins the results recorded (when there are as many).
void apply_recorded_origins(const SweepConfigSource& source, SweepPlan& plan);

/// Whether `path` holds the finished results of the sweep with `config_hash`
/// over the data `data`: what `--resume` keeps. False for a missing or unreadable file.
bool is_finished_results(const std::string& path, const std::string& config_hash, const DataIdentity& data);

/// What differs between the recorded sweep and its re-run: the data's sha256
/// (or size), tqlab's version. One sentence each; none for a config file.
std::vector<std::string> rerun_differences(const SweepConfigSource& source, const DataIdentity& data);

}  // namespace tqlab
