#include "metrics/metric_summary.h"

#include <cmath>

namespace tqlab {

SeedSpread seed_spread(std::span<const double> values) {
  SeedSpread out;
  double sum = 0;
  for (double value : values) sum += value;
  const auto count = static_cast<double>(values.size());
  out.mean = sum / count;
  if (values.size() > 1) {
    double squares = 0;
    for (double value : values) squares += (value - out.mean) * (value - out.mean);
    out.std = std::sqrt(squares / (count - 1));
  }
  return out;
}

}  // namespace tqlab
