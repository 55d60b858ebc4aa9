#include "allocate/verify.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "kv/layered_spec.h"
#include "sweep/sweep.h"

namespace tqlab {

namespace {

// The sweep of `sweep`'s runs, its results copied into `runs` (one per sweep run, in order).
SweepResults sweep_into(SweepConfig sweep, int threads,
                        const std::function<void(std::size_t done, std::size_t total)>& on_progress,
                        VerifiedRun* runs) {
  const SweepPlan plan = plan_sweep(std::move(sweep), PlanOptions{threads});
  SweepOptions options;
  options.threads = threads;
  if (on_progress) {
    options.on_progress = [&](std::size_t done, std::size_t total, int) { on_progress(done, total); };
  }
  SweepResults results = run_sweep(plan, options);
  for (std::size_t r = 0; r < results.runs.size(); ++r) {
    runs[r].id = results.runs[r].run->identity();
    runs[r].bits = results.runs[r].bits;
    runs[r].metrics = results.runs[r].metrics;
  }
  return results;
}

// The config's model block alone, with end-to-end metrics only, running `engine_runs`.
SweepConfig engine_sweep(const SweepConfig& config, const std::vector<EngineRunChoice>& engine_runs) {
  SweepConfig sweep = config;
  sweep.runs.clear();
  sweep.data = {};
  sweep.seeds = {config.seeds.front()};  // an engine's cache is deterministic: one seed measures it
  sweep.metrics.reconstruction = sweep.metrics.attention = sweep.metrics.needle = false;
  for (const EngineRunChoice& engine_run : engine_runs) {
    SweepRunConfig run;
    run.k.default_spec = engine_run.k;
    run.v.default_spec = engine_run.v;
    run.k.key_path = run.v.key_path = engine_run.name;
    run.origin = engine_run.name;
    run.engine = engine_run.engine;
    run.prefill = config.model->prefill;
    sweep.runs.push_back(std::move(run));
  }
  return sweep;
}

}  // namespace

Verification verify_choices(const SweepConfig& config, const std::vector<ProfiledChoice>& choices, int threads,
                            const std::function<void(std::size_t done, std::size_t total)>& on_progress) {
  const auto start = std::chrono::steady_clock::now();
  Verification verification;
  verification.seeds = config.seeds;
  SweepConfig sweep = config;
  sweep.runs.clear();
  std::vector<std::string> distinct;  // each run's k and v, as JSON
  for (const auto& [profile, choice] : choices) {
    SweepRunConfig run;
    run.k = choice_spec(*profile, choice->choice, Role::key);
    run.v = choice_spec(*profile, choice->choice, Role::value);
    const std::string written = layered_spec_json(run.k).dump() + layered_spec_json(run.v).dump();
    const auto same = std::find(distinct.begin(), distinct.end(), written);
    if (same != distinct.end()) {
      verification.runs[static_cast<std::size_t>(same - distinct.begin())].names.push_back(choice->name);
      continue;
    }
    distinct.push_back(written);
    verification.runs.emplace_back().names.push_back(choice->name);
    run.k.key_path = run.v.key_path = choice->name;
    run.origin = choice->name;
    sweep.runs.push_back(std::move(run));
  }
  verification.base = sweep_into(std::move(sweep), threads, on_progress, verification.runs.data()).end_to_end;
  verification.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return verification;
}

void verify_engine_runs(const SweepConfig& config, const std::vector<EngineRunChoice>& engine_runs, int threads,
                        const std::function<void(std::size_t done, std::size_t total)>& on_progress,
                        Verification& verification) {
  if (engine_runs.empty()) return;
  if (!config.model) throw InternalError("verify_engine_runs: engine runs without a model block");
  const auto start = std::chrono::steady_clock::now();
  const std::size_t first = verification.runs.size();
  for (const EngineRunChoice& engine_run : engine_runs)
    verification.runs.emplace_back().names.push_back(engine_run.name);
  sweep_into(engine_sweep(config, engine_runs), threads, on_progress, verification.runs.data() + first);
  verification.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string measured_damage_metric(const Profile& profile) {
  return profile.kind == ProfileKind::model ? "e2e_kld" : "attn_out_rel_err";
}

const VerifiedRun* verified_run(const Verification& verification, const std::string& name) {
  for (const VerifiedRun& run : verification.runs) {
    if (std::find(run.names.begin(), run.names.end(), name) != run.names.end()) return &run;
  }
  return nullptr;
}

std::optional<double> measured_mean(const VerifiedRun& run, const std::string& name) {
  for (const auto& [metric, summary] : run.metrics) {
    if (metric == name) return summary.mean;
  }
  return std::nullopt;
}

std::optional<double> measured_mean(const Verification& verification, const std::string& name,
                                    const std::string& metric) {
  const VerifiedRun* run = verified_run(verification, name);
  return run ? measured_mean(*run, metric) : std::nullopt;
}

}  // namespace tqlab
