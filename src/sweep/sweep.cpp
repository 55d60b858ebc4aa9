#include "sweep/sweep.h"

#include <chrono>

namespace tqlab {

SweepResults run_sweep(const SweepPlan& plan, const SweepOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SweepTiming timing;
  const SweepTotals totals = compute_sweep_totals(plan, options, timing);
  SweepResults results = summarize_sweep(plan, totals);
  results.timing = timing;
  results.timing.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return results;
}

}  // namespace tqlab
