#include "allocate/verify.h"

#include <algorithm>
#include <chrono>

#include "sweep/sweep.h"

namespace tqlab {

Verification verify_choices(const SweepConfig& config, const Profile& profile,
                            const std::vector<const ScoredChoice*>& choices, int threads,
                            const std::function<void(std::size_t done, std::size_t total)>& on_progress) {
  const auto start = std::chrono::steady_clock::now();
  Verification verification;
  verification.seeds = config.seeds;
  SweepConfig sweep = config;
  sweep.runs.clear();
  std::vector<const ScoredChoice*> distinct;
  for (const ScoredChoice* choice : choices) {
    const auto same = std::find_if(distinct.begin(), distinct.end(),
                                   [&](const ScoredChoice* other) { return other->choice == choice->choice; });
    if (same != distinct.end()) {
      verification.runs[static_cast<std::size_t>(same - distinct.begin())].names.push_back(choice->name);
      continue;
    }
    distinct.push_back(choice);
    verification.runs.emplace_back().names.push_back(choice->name);
    SweepRunConfig run;
    run.k = choice_spec(profile, choice->choice, Role::key);
    run.v = choice_spec(profile, choice->choice, Role::value);
    run.k.key_path = run.v.key_path = choice->name;
    run.origin = choice->name;
    sweep.runs.push_back(std::move(run));
  }
  const SweepPlan plan = plan_sweep(std::move(sweep), PlanOptions{threads});
  SweepOptions options;
  options.threads = threads;
  if (on_progress) {
    options.on_progress = [&](std::size_t done, std::size_t total, int) { on_progress(done, total); };
  }
  const SweepResults results = run_sweep(plan, options);
  for (std::size_t r = 0; r < results.runs.size(); ++r) {
    verification.runs[r].id = results.runs[r].run->identity();
    verification.runs[r].bits = results.runs[r].bits;
    verification.runs[r].metrics = results.runs[r].metrics;
  }
  verification.base = results.end_to_end;
  verification.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return verification;
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

}  // namespace tqlab
