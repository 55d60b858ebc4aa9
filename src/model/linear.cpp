#include "model/linear.h"

#include <algorithm>
#include <vector>

#include "model/matmul.h"

namespace tqlab {

void linear(int tokens, const float* x, const WeightMatrix& w, const float* bias, float* y, std::int64_t ldy,
            Workers& workers) {
  const auto blocks = static_cast<std::size_t>((w.rows + kLinearBlockRows - 1) / kLinearBlockRows);
  workers.run(blocks, [&](std::size_t block, int worker) {
    const std::int64_t first = static_cast<std::int64_t>(block) * kLinearBlockRows;
    const std::int64_t count = std::min<std::int64_t>(kLinearBlockRows, w.rows - first);
    const float* rows = w.rows_as_float(first, count, workers.floats(worker, WorkerBuffer::rows));
    const auto k = static_cast<int>(w.cols);
    matmul_nt(tokens, static_cast<int>(count), k, 1.0f, x, k, rows, k, 0.0f, y + first, ldy);
    if (bias == nullptr) return;
    for (int t = 0; t < tokens; ++t) {
      float* out = y + t * ldy + first;
      for (std::int64_t j = 0; j < count; ++j) out[j] += bias[first + j];
    }
  });
}

void linear_reference(int tokens, const float* x, const WeightMatrix& w, const float* bias, float* y,
                      std::int64_t ldy) {
  std::vector<float> row(static_cast<std::size_t>(w.cols));
  for (std::int64_t j = 0; j < w.rows; ++j) {
    const float* weights = w.rows_as_float(j, 1, row);
    for (int t = 0; t < tokens; ++t) {
      double sum = 0;
      for (std::int64_t l = 0; l < w.cols; ++l) sum += static_cast<double>(x[t * w.cols + l]) * weights[l];
      y[t * ldy + j] = static_cast<float>(sum) + (bias != nullptr ? bias[j] : 0.0f);
    }
  }
}

}  // namespace tqlab
