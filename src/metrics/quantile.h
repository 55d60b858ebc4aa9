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
#include <span>
#include <vector>

namespace tqlab {

/// The q-quantile of `values` (reordered); nullopt when empty.
std::optional<double> quantile(std::vector<double>& values, double q);

/// The q-quantile of at most `max_count` values streamed in any order (the
/// result does not depend on the order). Keeps max_count - floor(q (max_count - 1))
/// values: exact for every count up to max_count.
///
/// Pieces merge exactly: the largest `capacity` values of a union are among
/// the largest `capacity` values of each part. So a part summarized by an
/// UpperQuantile of at least this one's capacity (its count() and kept()),
/// added with add_kept(), gives the very value the part's values added one by
/// one would give: a sweep computed in shards, or resumed from a journal,
/// reports the same percentiles.
class UpperQuantile {
 public:
  UpperQuantile(double q, std::int64_t max_count);

  void add(double value);
  /// Adds a part of `count` values of which `largest` are the largest
  /// min(count, its capacity) (any order), the part's capacity being at least
  /// this one's. InputError when `largest` holds more values than `count`.
  void add_kept(std::int64_t count, std::span<const double> largest);
  /// The q-quantile of the values added so far; nullopt when none.
  std::optional<double> value() const;

  /// Values added so far.
  std::int64_t count() const { return count_; }
  /// Values kept: min(count(), capacity()).
  std::size_t capacity() const { return capacity_; }
  /// The kept values, largest first.
  std::vector<double> kept() const;

 private:
  double q_;
  std::size_t capacity_;
  std::int64_t count_ = 0;
  std::priority_queue<double, std::vector<double>, std::greater<double>> largest_;  // min-heap
};

}  // namespace tqlab
