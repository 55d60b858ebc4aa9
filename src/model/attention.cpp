#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/exp_kernels.h"
#include "model/matmul.h"

namespace tqlab {
namespace {

// Row r of `scores` (keys entries) becomes softmax over its first n entries
// (the keys query i0 + r may read), zeros after.
void softmax_row(int n, int keys, float* scores, std::vector<double>& e) {
  float largest = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < n; ++j) largest = std::max(largest, scores[j]);
  e.resize(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) e[static_cast<std::size_t>(j)] = static_cast<double>(scores[j]) - largest;
  exp_array(n, e.data(), e.data());
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += e[static_cast<std::size_t>(j)];
  const double inverse = 1.0 / sum;
  for (int j = 0; j < n; ++j) scores[j] = static_cast<float>(e[static_cast<std::size_t>(j)] * inverse);
  std::fill(scores + n, scores + keys, 0.0f);
}

// The first key query i reads exact: the recent window's and the prefill piece's, whichever
// starts earlier (both end at i; i + 1: none).
int first_exact_key(const AttentionInput& in, int i) {
  const int window_first = in.recent_window > 0 ? std::max(0, i - in.recent_window + 1) : i + 1;
  return std::min(window_first, in.prefill.first_exact_key(i, in.tokens));
}

}  // namespace

void causal_attention(const AttentionInput& in, float* out, Workers& workers) {
  const int blocks = (in.tokens + kAttentionQueryRows - 1) / kAttentionQueryRows;
  const int group = in.q_heads / in.kv_heads;
  const int dim = in.head_dim;
  const bool mixes = in.recent_window > 0 || in.prefill.exact_chunk > 0;
  const bool mix_keys = mixes && in.k_cache != in.k;
  const bool mix_values = mixes && in.v_cache != in.v;
  workers.run(static_cast<std::size_t>(in.q_heads) * static_cast<std::size_t>(blocks), [&](std::size_t item,
                                                                                           int worker) {
    const int head = static_cast<int>(item) / blocks;
    const int kv_head = head / group;
    const int first = (static_cast<int>(item) % blocks) * kAttentionQueryRows;
    const int rows = std::min(kAttentionQueryRows, in.tokens - first);
    const int keys = first + rows;  // every key the block's last query reads
    const float* q = in.q + first * in.q_stride + static_cast<std::ptrdiff_t>(head) * dim;
    const std::ptrdiff_t column = static_cast<std::ptrdiff_t>(kv_head) * dim;
    float* o = out + first * in.q_stride + static_cast<std::ptrdiff_t>(head) * dim;

    std::vector<float>& scores = workers.floats(worker, WorkerBuffer::scores);
    scores.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(keys));
    matmul_nt(rows, keys, dim, in.scale, q, in.q_stride, in.k_cache + column, in.kv_stride, 0.0f, scores.data(), keys);

    // Keys first_exact..keys-1 are the only ones a query of the block may read exact.
    const int first_exact = first_exact_key(in, first);
    const int span = keys - first_exact;
    std::vector<float>& exact = workers.floats(worker, WorkerBuffer::exact);
    if (mix_keys) {
      exact.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(span));
      matmul_nt(rows, span, dim, in.scale, q, in.q_stride, in.k + first_exact * in.kv_stride + column, in.kv_stride,
                0.0f, exact.data(), span);
      for (int r = 0; r < rows; ++r) {
        const int i = first + r;
        for (int j = first_exact_key(in, i); j <= i; ++j) {
          scores[static_cast<std::size_t>(r * keys + j)] = exact[static_cast<std::size_t>(r * span + j - first_exact)];
        }
      }
    }
    std::vector<double>& e = workers.doubles(worker);
    for (int r = 0; r < rows; ++r)
      softmax_row(first + r + 1, keys, scores.data() + static_cast<std::ptrdiff_t>(r) * keys, e);

    if (!mix_values) {
      matmul_nn(rows, dim, keys, 1.0f, scores.data(), keys, in.v_cache + column, in.kv_stride, 0.0f, o, in.q_stride);
      return;
    }
    // P = P_cache + P_exact: the window's weights read the exact values.
    exact.assign(static_cast<std::size_t>(rows) * static_cast<std::size_t>(span), 0.0f);
    for (int r = 0; r < rows; ++r) {
      const int i = first + r;
      for (int j = first_exact_key(in, i); j <= i; ++j) {
        float& weight = scores[static_cast<std::size_t>(r * keys + j)];
        exact[static_cast<std::size_t>(r * span + j - first_exact)] = weight;
        weight = 0.0f;
      }
    }
    matmul_nn(rows, dim, keys, 1.0f, scores.data(), keys, in.v_cache + column, in.kv_stride, 0.0f, o, in.q_stride);
    matmul_nn(rows, dim, span, 1.0f, exact.data(), span, in.v + first_exact * in.kv_stride + column, in.kv_stride,
              1.0f, o, in.q_stride);
  });
}

void causal_attention_reference(const AttentionInput& in, float* out) {
  const int group = in.q_heads / in.kv_heads;
  const int dim = in.head_dim;
  std::vector<double> logits(static_cast<std::size_t>(in.tokens));
  for (int head = 0; head < in.q_heads; ++head) {
    const std::ptrdiff_t column = static_cast<std::ptrdiff_t>(head / group) * dim;
    for (int i = 0; i < in.tokens; ++i) {
      const float* q = in.q + i * in.q_stride + static_cast<std::ptrdiff_t>(head) * dim;
      const auto exact = [&](int j) { return j >= first_exact_key(in, i); };
      double largest = -std::numeric_limits<double>::infinity();
      for (int j = 0; j <= i; ++j) {
        const float* k = (exact(j) ? in.k : in.k_cache) + j * in.kv_stride + column;
        double dot = 0;
        for (int d = 0; d < dim; ++d) dot += static_cast<double>(q[d]) * k[d];
        logits[static_cast<std::size_t>(j)] = static_cast<double>(in.scale) * dot;
        largest = std::max(largest, logits[static_cast<std::size_t>(j)]);
      }
      double sum = 0;
      for (int j = 0; j <= i; ++j) sum += std::exp(logits[static_cast<std::size_t>(j)] - largest);
      float* o = out + i * in.q_stride + static_cast<std::ptrdiff_t>(head) * dim;
      for (int d = 0; d < dim; ++d) {
        double value = 0;
        for (int j = 0; j <= i; ++j) {
          const float* v = (exact(j) ? in.v : in.v_cache) + j * in.kv_stride + column;
          value += std::exp(logits[static_cast<std::size_t>(j)] - largest) / sum * v[d];
        }
        o[d] = static_cast<float>(value);
      }
    }
  }
}

}  // namespace tqlab
