// Quantiles of many values, exactly, without keeping them all.
//
// The q-quantile is numpy's default (linear interpolation): with the N values
// sorted ascending as x_0..x_{N-1}, h = q (N - 1), lo = floor(h),
//   Q = x_lo + (h - lo) (x_{lo+1} - x_lo).
// Only x_lo and x_{lo+1} matter, so for the upper tail (q = 0.95) it is enough
// to keep the N - lo largest values: 5% of them.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace tqlab {

/// The q-quantile of `values` (reordered); nullopt when empty.
std::optional<double> quantile(std::vector<double>& values, double q);

/// The q-quantile of at most `max_count` values streamed in any order (the
/// result does not depend on the order). Keeps max_count - floor(q (max_count - 1))
/// values: exact for every count up to max_count.
class UpperQuantile {
 public:
  UpperQuantile(double q, std::int64_t max_count);

  void add(double value);
  /// The q-quantile of the values added so far; nullopt when none.
  std::optional<double> value() const;

 private:
  double q_;
  std::size_t capacity_;
  std::int64_t count_ = 0;
  std::priority_queue<double, std::vector<double>, std::greater<double>> largest_;  // min-heap
};

}  // namespace tqlab
