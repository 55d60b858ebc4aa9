#include "quant/tq_kernels.h"

#include <cmath>

namespace tqlab {

float vector_norm(int n, const float* x) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return static_cast<float>(std::sqrt(sum));
}

void quantize_to_codes(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
  const float* boundaries = codebook.boundaries_f.data();
  const int count = static_cast<int>(codebook.boundaries_f.size());
  if (codebook.bits <= 4) {
    // At most 15 boundaries: compare every value against each; the loops vectorize.
    for (int i = 0; i < n; ++i) {
      int code = 0;
      for (int k = 0; k < count; ++k) code += y[i] > boundaries[k];
      codes[i] = static_cast<std::uint8_t>(code);
    }
    return;
  }
  // 2^b - 1 boundaries: search the implicit tree, one comparison per bit.
  for (int i = 0; i < n; ++i) {
    int code = 0;
    for (int step = 1 << (codebook.bits - 1); step > 0; step >>= 1) {
      code += (y[i] > boundaries[code + step - 1]) ? step : 0;
    }
    codes[i] = static_cast<std::uint8_t>(code);
  }
}

void quantize_to_codes_reference(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
  for (int i = 0; i < n; ++i) {
    int best = 0;
    double best_distance = INFINITY;
    for (int level = 0; level < static_cast<int>(codebook.centroids.size()); ++level) {
      const double distance = std::fabs(static_cast<double>(y[i]) - codebook.centroids_f[static_cast<std::size_t>(level)]);
      if (distance <= best_distance) {
        best = level;
        best_distance = distance;
      }
    }
    codes[i] = static_cast<std::uint8_t>(best);
  }
}

}  // namespace tqlab
