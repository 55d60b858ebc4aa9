// --verify: the allocation and the rules it is compared with, measured — not predicted — by the
// ordinary sweep of the config (its data or model, its metrics, its seeds; with a model block
// the e2e_* metrics too), one run per distinct choice.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "allocate/allocation.h"
#include "sweep/sweep_config.h"
#include "sweep/sweep_summary.h"

namespace tqlab {

struct VerifiedRun {
  std::vector<std::string> names;  ///< the choices measured by this run ("allocation", "uniform tq:b=3,nc", ...)
  std::string id;                  ///< the sweep's run identity
  RunBits bits;
  Named<MetricSummary> metrics;  ///< as the sweep summarizes them (mean, se, std over seeds, per seed)
};

struct Verification {
  std::vector<std::uint64_t> seeds;
  std::vector<VerifiedRun> runs;     ///< in the order of the choices given, equal choices measured once
  std::optional<EndToEndBase> base;  ///< the model's exact-cache perplexity, with a model block
  double seconds = 0;
};

/// A plan run under an engine's own semantics (engine/engine.h), one cache type per role.
struct EngineRunChoice {
  std::string name;    ///< as verified_run finds it
  std::string engine;  ///< canonical spelling
  std::string k, v;    ///< the engine's cache types
};

/// A choice and the profile whose units it gives a candidate each.
struct ProfiledChoice {
  const Profile* profile;
  const ScoredChoice* choice;
};

/// Sweeps `choices` over `config`'s data or model (choices that write the same run measured once).
/// `on_progress(done, total)` is called as the sweep's work items and model passes finish.
Verification verify_choices(const SweepConfig& config, const std::vector<ProfiledChoice>& choices, int threads,
                            const std::function<void(std::size_t done, std::size_t total)>& on_progress);

/// Measures `engine_runs` over `config`'s model block (end-to-end metrics only, the first seed: an
/// engine's cache is deterministic) and appends them to `verification`'s runs.
void verify_engine_runs(const SweepConfig& config, const std::vector<EngineRunChoice>& engine_runs, int threads,
                        const std::function<void(std::size_t done, std::size_t total)>& on_progress,
                        Verification& verification);

/// The measured metric rows are compared by, and measured / predicted is given for: a model
/// profile's e2e_kld, an offline profile's attn_out_rel_err.
std::string measured_damage_metric(const Profile& profile);

/// The run of `verification` that measured the choice `name`; null when none did.
const VerifiedRun* verified_run(const Verification& verification, const std::string& name);

/// Mean over seeds of metric `name` in `run`; nullopt when it has none.
std::optional<double> measured_mean(const VerifiedRun& run, const std::string& name);

/// Mean over seeds of metric `metric` in the run of `verification` that measured the choice `name`;
/// nullopt when no run did or it has no such metric.
std::optional<double> measured_mean(const Verification& verification, const std::string& name,
                                    const std::string& metric);

}  // namespace tqlab
