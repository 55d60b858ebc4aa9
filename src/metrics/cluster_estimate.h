// Means with standard errors when observations come in clusters.
//
// Every sweep metric is a ratio of sums, R = sum_c A_c / sum_c B_c, over
// clusters c: a mean over queries has A_c = sum of the per-query values of
// cluster c and B_c = its query count; k_rel_mse has A_c = sum |x - x~|^2 and
// B_c = sum |x|^2. Queries of one attention head are not independent (they
// share keys and the quantizer's rotation), so the standard error treats each
// (layer, kv head) as one cluster: the cluster-robust (linearized ratio)
// estimate
//   se(R)^2 = C / (C - 1) * sum_c (A_c - R B_c)^2 / (sum_c B_c)^2,
// C the number of clusters with B_c > 0 (Cameron & Miller, "A Practitioner's
// Guide to Cluster-Robust Inference", 2015, eq. 11 without the K term).
#pragma once

#include <optional>
#include <span>

namespace tqlab {

/// The two sums of one metric over one cluster (or any set of observations).
struct RatioSum {
  double numerator = 0;
  double denominator = 0;

  void add(double value, double weight = 1.0) {
    numerator += value;
    denominator += weight;
  }
  RatioSum& operator+=(const RatioSum& other) {
    numerator += other.numerator;
    denominator += other.denominator;
    return *this;
  }
};

struct ClusterEstimate {
  std::optional<double> value;           ///< sum A / sum B; nullopt when sum B == 0
  std::optional<double> standard_error;  ///< nullopt with fewer than 2 clusters of B > 0
};

/// R and its cluster-robust standard error over `clusters` (in a fixed order,
/// so the result does not depend on how the sums were computed).
ClusterEstimate cluster_estimate(std::span<const RatioSum> clusters);

/// sqrt(R) with the delta-method error se / (2 sqrt(R)) (a root mean square from a mean square).
ClusterEstimate square_root(const ClusterEstimate& mean_square);

}  // namespace tqlab
