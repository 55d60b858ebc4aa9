#include "model/layer_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/exp_kernels.h"

namespace tqlab {

void rms_norm(int rows, int width, std::int64_t stride, const float* x, const float* weight, double eps, float* y) {
  for (int r = 0; r < rows; ++r) {
    const float* in = x + r * stride;
    float* out = y + r * stride;
    double sum = 0;
    for (int i = 0; i < width; ++i) sum += static_cast<double>(in[i]) * in[i];
    const auto inverse = static_cast<float>(1.0 / std::sqrt(sum / width + eps));
    for (int i = 0; i < width; ++i) out[i] = weight[i] * (in[i] * inverse);
  }
}

void silu_multiply(std::int64_t count, float* gate, const float* up, Workers& workers) {
  constexpr std::int64_t kPiece = 4096;  // values per work item
  const auto pieces = static_cast<std::size_t>((count + kPiece - 1) / kPiece);
  workers.run(pieces, [&](std::size_t piece, int worker) {
    const std::int64_t first = static_cast<std::int64_t>(piece) * kPiece;
    const auto n = static_cast<int>(std::min(kPiece, count - first));
    std::vector<double>& e = workers.doubles(worker);
    e.resize(static_cast<std::size_t>(n));
    float* g = gate + first;
    // e^-g can overflow to +Inf for g < -709: silu is then -0, as 1/(1+Inf) gives.
    for (int i = 0; i < n; ++i) e[static_cast<std::size_t>(i)] = std::min(-static_cast<double>(g[i]), 709.0);
    exp_array(n, e.data(), e.data());
    for (int i = 0; i < n; ++i) {
      const double silu = static_cast<double>(g[i]) / (1.0 + e[static_cast<std::size_t>(i)]);
      g[i] = static_cast<float>(silu) * up[first + i];
    }
  });
}

void add_in_place(std::int64_t count, float* x, const float* y) {
  for (std::int64_t i = 0; i < count; ++i) x[i] += y[i];
}

}  // namespace tqlab
