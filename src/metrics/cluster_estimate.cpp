#include "metrics/cluster_estimate.h"

#include <algorithm>
#include <cmath>

namespace tqlab {

ClusterEstimate cluster_estimate(std::span<const RatioSum> clusters) {
  RatioSum total;
  int count = 0;
  for (const RatioSum& cluster : clusters) {
    total += cluster;
    count += cluster.denominator > 0;
  }
  ClusterEstimate estimate;
  if (!(total.denominator > 0)) return estimate;
  const double ratio = total.numerator / total.denominator;
  estimate.value = ratio;
  if (count < 2) return estimate;
  double spread = 0;
  for (const RatioSum& cluster : clusters) {
    if (!(cluster.denominator > 0)) continue;
    const double residual = cluster.numerator - ratio * cluster.denominator;
    spread += residual * residual;
  }
  estimate.standard_error = std::sqrt(static_cast<double>(count) / (count - 1) * spread) / total.denominator;
  return estimate;
}

ClusterEstimate square_root(const ClusterEstimate& mean_square) {
  ClusterEstimate root;
  if (!mean_square.value) return root;
  const double value = std::sqrt(std::max(*mean_square.value, 0.0));
  root.value = value;
  if (mean_square.standard_error) {
    root.standard_error = value > 0 ? *mean_square.standard_error / (2 * value) : 0.0;
  }
  return root;
}

}  // namespace tqlab
