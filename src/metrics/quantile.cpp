#include "metrics/quantile.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace tqlab {
namespace {

std::int64_t lower_rank(double q, std::int64_t count) {
  return static_cast<std::int64_t>(std::floor(q * static_cast<double>(count - 1)));
}

}  // namespace

std::optional<double> quantile(std::vector<double>& values, double q) {
  if (values.empty()) return std::nullopt;
  const auto count = static_cast<std::int64_t>(values.size());
  const double h = q * static_cast<double>(count - 1);
  const std::int64_t lo = lower_rank(q, count);
  std::nth_element(values.begin(), values.begin() + lo, values.end());
  const double low = values[static_cast<std::size_t>(lo)];
  if (lo + 1 >= count) return low;
  const double high = *std::min_element(values.begin() + lo + 1, values.end());
  return low + (h - static_cast<double>(lo)) * (high - low);
}

UpperQuantile::UpperQuantile(double q, std::int64_t max_count) : q_(q) {
  const std::int64_t count = std::max<std::int64_t>(max_count, 1);
  capacity_ = static_cast<std::size_t>(count - lower_rank(q, count));
}

void UpperQuantile::add(double value) {
  ++count_;
  if (largest_.size() < capacity_) {
    largest_.push(value);
  } else if (value > largest_.top()) {
    largest_.pop();
    largest_.push(value);
  }
}

void UpperQuantile::add_kept(std::int64_t count, std::span<const double> largest) {
  if (count < 0 || static_cast<std::int64_t>(largest.size()) > count) {
    fail("a quantile part of {} values cannot keep {} of them", count, largest.size());
  }
  for (double value : largest) add(value);
  count_ += count - static_cast<std::int64_t>(largest.size());
}

std::vector<double> UpperQuantile::kept() const {
  std::vector<double> values;
  values.reserve(largest_.size());
  auto heap = largest_;
  while (!heap.empty()) {
    values.push_back(heap.top());
    heap.pop();
  }
  std::reverse(values.begin(), values.end());
  return values;
}

std::optional<double> UpperQuantile::value() const {
  if (count_ == 0) return std::nullopt;
  // capacity_ is at least count_ - lo for every count_ <= max_count, so the
  // kept values are x_{count_-kept}..x_{count_-1}, which include x_lo and x_{lo+1}.
  std::vector<double> kept;
  auto heap = largest_;
  while (!heap.empty()) {
    kept.push_back(heap.top());
    heap.pop();
  }
  const auto skipped = count_ - static_cast<std::int64_t>(kept.size());
  const std::int64_t lo = lower_rank(q_, count_);
  if (lo < skipped) fail("internal: quantile asked of more values than it was sized for");
  const double h = q_ * static_cast<double>(count_ - 1);
  const double low = kept[static_cast<std::size_t>(lo - skipped)];
  if (lo + 1 >= count_) return low;
  const double high = kept[static_cast<std::size_t>(lo + 1 - skipped)];
  return low + (h - static_cast<double>(lo)) * (high - low);
}

}  // namespace tqlab
