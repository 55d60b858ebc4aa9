// The values every bucketizing test feeds the kernels
// (tests/kernel_dispatch_test.cpp, tests/tq_kernels_test.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "quant/codebook.h"

namespace tqlab::testing {

/// The values where bucketizing kernels could disagree: zeros of both signs,
/// the extreme finite, normal and subnormal magnitudes, infinities, values far
/// outside [-1, 1], each boundary and centroid of `codebook` with its float
/// neighbours on both sides.
inline std::vector<float> bucketizing_marks(const Codebook& codebook) {
  constexpr float kMax = std::numeric_limits<float>::max();
  constexpr float kMinNormal = std::numeric_limits<float>::min();
  constexpr float kMinSubnormal = std::numeric_limits<float>::denorm_min();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f, -0.0f, 1.0f,       -1.0f,       10.0f,         -10.0f,         1e-30f, -1e-30f,
                               kMax, -kMax, kMinNormal, -kMinNormal, kMinSubnormal, -kMinSubnormal, kInf,   -kInf};
  std::vector<float> marks = codebook.boundaries_f;
  marks.insert(marks.end(), codebook.centroids_f.begin(), codebook.centroids_f.end());
  for (float mark : marks) values.insert(values.end(), {std::nextafter(mark, -2.0f), mark, std::nextafter(mark, 2.0f)});
  return values;
}

/// What the bucketizing kernels see: bucketizing_marks first (so that the SIMD
/// steps of 32 values get them, not only the scalar tail), then 203
/// coordinates of a rotated unit vector (N(0, 1/d); 32-value steps leave a tail).
inline std::vector<float> bucketizing_values(const Codebook& codebook, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values = bucketizing_marks(codebook);
  for (int i = 0; i < 203; ++i) values.push_back(static_cast<float>(rng.gaussian() / std::sqrt(codebook.dim)));
  return values;
}

}  // namespace tqlab::testing
