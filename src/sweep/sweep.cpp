#include "sweep/sweep.h"

#include <chrono>

namespace tqlab {

SweepTotals compute_timed_sweep_totals(const SweepPlan& plan, const SweepOptions& options, SweepTiming& timing) {
  const auto start = std::chrono::steady_clock::now();
  SweepTotals totals = compute_sweep_totals(plan, options, timing);
  timing.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return totals;
}

SweepResults run_sweep(const SweepPlan& plan, const SweepOptions& options) {
  SweepTiming timing;
  const SweepTotals totals = compute_timed_sweep_totals(plan, options, timing);
  SweepResults results = summarize_sweep(plan, totals);
  results.timing = timing;
  return results;
}

}  // namespace tqlab
