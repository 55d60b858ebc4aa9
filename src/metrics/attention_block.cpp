#include "metrics/attention_block.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace tqlab {
namespace {

// c (m x n) = a (m x k) b^T, b being n x k: every row pair's dot product.
void multiply_transposed(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
}
void multiply_transposed(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0, a, k, b, k, 0.0, c, n);
}

// c (m x n) = beta c + a (m x k) b (k x n).
void multiply(int m, int n, int k, const float* a, const float* b, float beta, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, beta, c, n);
}

double row_norm(int n, const float* x) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return std::sqrt(sum);
}

}  // namespace

void AttentionBlock::set_exact(const ChunkGeometry& chunk, int first, int rows, bool causal, double scale,
                               int key_dim, int value_dim, const float* q, const float* k, const float* v) {
  chunk_ = chunk;
  first_ = first;
  rows_ = rows;
  causal_ = causal;
  scale_ = scale;
  key_dim_ = key_dim;
  value_dim_ = value_dim;
  q_ = q;
  v_ = v;
  keys_ = causal ? first + rows : chunk.tokens;
  const auto cells = static_cast<std::size_t>(rows) * static_cast<std::size_t>(keys_);
  // The exact logits in double (computed once per block, so the cost is small):
  // P is then exact to double precision even for logits in the hundreds.
  queries_d_.assign(q, q + static_cast<std::size_t>(rows) * key_dim);
  keys_d_.assign(k, k + static_cast<std::size_t>(keys_) * key_dim);
  logits_.resize(cells);
  multiply_transposed(rows, keys_, key_dim, queries_d_.data(), keys_d_.data(), logits_.data());
  for (double& logit : logits_) logit *= scale;
  probabilities_.assign(cells, 0.0);
  probabilities_f_.assign(cells, 0.0f);
  argmax_.resize(static_cast<std::size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    const int attended = attended_keys(chunk, causal, first + row);
    const std::size_t at = static_cast<std::size_t>(row) * static_cast<std::size_t>(keys_);
    argmax_[static_cast<std::size_t>(row)] = exact_softmax(attended, logits_.data() + at, probabilities_.data() + at);
    for (int j = 0; j < attended; ++j) probabilities_f_[at + j] = static_cast<float>(probabilities_[at + j]);
  }
  output_error_.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(value_dim));
  multiply(rows, value_dim, keys_, probabilities_f_.data(), v, 0.0f, output_error_.data());  // P V, for its norms
  output_norm_.resize(static_cast<std::size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    output_norm_[static_cast<std::size_t>(row)] =
        row_norm(value_dim, output_error_.data() + static_cast<std::size_t>(row) * static_cast<std::size_t>(value_dim));
  }
  logit_error_.resize(cells);
  change_.resize(cells);
  kept_.resize(cells);
  delta_.resize(static_cast<std::size_t>(keys_));
  p_tilde_.resize(static_cast<std::size_t>(keys_));
  scratch_.resize(static_cast<std::size_t>(keys_));
}

void AttentionBlock::set_key_error(const float* dk) {
  multiply_transposed(rows_, keys_, key_dim_, q_, dk, logit_error_.data());
}

void AttentionBlock::compare(const ExactTokens& exact, const float* dv, const Consumer& consume) {
  std::vector<QueryAttentionError> errors(static_cast<std::size_t>(rows_));
  for (int row = 0; row < rows_; ++row) {
    const int i = first_ + row;
    const int attended = attended_keys(chunk_, causal_, i);
    const std::size_t at = static_cast<std::size_t>(row) * static_cast<std::size_t>(keys_);
    scale_logit_errors(attended, scale_, logit_error_.data() + at, delta_.data());
    const auto ranges = exact.ranges(chunk_, i, attended);
    for (const auto& [from, to] : ranges) std::fill(delta_.begin() + from, delta_.begin() + to, 0.0);
    errors[static_cast<std::size_t>(row)] = compare_query_attention(
        attended, logits_.data() + at, probabilities_.data() + at, argmax_[static_cast<std::size_t>(row)],
        delta_.data(), p_tilde_.data(), scratch_.data());
    probability_changes(attended, probabilities_.data() + at, p_tilde_.data(), change_.data() + at, kept_.data() + at);
    // Keys past this query's (causal) take no part in the output products.
    std::fill(change_.begin() + static_cast<std::ptrdiff_t>(at) + attended,
              change_.begin() + static_cast<std::ptrdiff_t>(at) + keys_, 0.0f);
    std::fill(kept_.begin() + static_cast<std::ptrdiff_t>(at) + attended,
              kept_.begin() + static_cast<std::ptrdiff_t>(at) + keys_, 0.0f);
    for (const auto& [from, to] : ranges) std::fill(kept_.begin() + at + from, kept_.begin() + at + to, 0.0f);
  }
  multiply(rows_, value_dim_, keys_, change_.data(), v_, 0.0f, output_error_.data());
  multiply(rows_, value_dim_, keys_, kept_.data(), dv, 1.0f, output_error_.data());
  for (int row = 0; row < rows_; ++row) {
    const double reference = output_norm_[static_cast<std::size_t>(row)];
    std::optional<double> output_error;
    if (reference > 0) {
      output_error = row_norm(value_dim_, output_error_.data() +
                                              static_cast<std::size_t>(row) * static_cast<std::size_t>(value_dim_)) /
                     reference;
    }
    consume(row, errors[static_cast<std::size_t>(row)], output_error);
  }
}

}  // namespace tqlab
