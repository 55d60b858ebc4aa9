#include "metrics/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tqlab {
namespace {

double dot(int n, const float* a, const float* b) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return sum;
}

std::vector<double> softmax(const std::vector<double>& logits) {
  const double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (std::size_t j = 0; j < logits.size(); ++j) sum += p[j] = std::exp(logits[j] - top);
  for (double& value : p) value /= sum;
  return p;
}

// The first index of the largest value.
std::size_t first_argmax(const std::vector<double>& values) {
  return static_cast<std::size_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

bool is_exact(const ExactTokens& exact, const ChunkGeometry& chunk, int i, int j) {
  if (chunk.start + j < exact.sink) return true;
  if (exact.window <= 0) return false;
  if (exact.mode == WindowMode::recent) return j <= i && i - j < exact.window;
  return j >= chunk.tokens - exact.window;
}

}  // namespace

std::vector<ReferenceQueryResult> attention_reference(const AttentionReferenceInput& in) {
  std::vector<ReferenceQueryResult> results;
  for (const ChunkGeometry& chunk : split_chunks(in.tokens, in.chunk)) {
    for (int i = 0; i < chunk.tokens; ++i) {
      const int t = chunk.start + i;
      const float* q = in.queries + static_cast<std::size_t>(t) * in.key_dim;
      const int keys = in.causal ? i + 1 : chunk.tokens;
      std::vector<double> logits(keys), quantized_logits(keys);
      std::vector<const float*> quantized_values(keys);
      for (int j = 0; j < keys; ++j) {
        const std::size_t token = static_cast<std::size_t>(chunk.start + j);
        const bool exact = is_exact(in.exact, chunk, i, j);
        logits[j] = in.scale * dot(in.key_dim, q, in.keys + token * in.key_dim);
        quantized_logits[j] = in.scale * dot(in.key_dim, q, (exact ? in.keys : in.keys_quantized) + token * in.key_dim);
        quantized_values[j] = (exact ? in.values : in.values_quantized) + token * in.value_dim;
      }
      const std::vector<double> p = softmax(logits);
      const std::vector<double> p_tilde = softmax(quantized_logits);

      ReferenceQueryResult result;
      result.token = t;
      QueryAttentionError& error = result.error;
      error.kl = 0;
      for (int j = 0; j < keys; ++j) {
        if (p[j] > 0) error.kl += p[j] * (std::log(p[j]) - std::log(p_tilde[j]));
      }
      const std::size_t best = first_argmax(logits);
      error.top1 = first_argmax(quantized_logits) == best;
      std::vector<std::size_t> order(static_cast<std::size_t>(keys));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return quantized_logits[a] > quantized_logits[b]; });
      error.top5 =
          std::find(order.begin(), order.begin() + std::min(5, keys), best) != order.begin() + std::min(5, keys);
      double pp = 0, pq = 0, qq = 0, bias = 0, square = 0;
      for (int j = 0; j < keys; ++j) {
        pp += p[j] * p[j];
        pq += p[j] * p_tilde[j];
        qq += p_tilde[j] * p_tilde[j];
        const double difference = quantized_logits[j] - logits[j];
        bias += difference;
        square += difference * difference;
      }
      error.cosine = pq / std::sqrt(pp * qq);
      error.ip_bias = bias / keys;
      error.ip_mean_square = square / keys;

      double exact_norm = 0, difference_norm = 0;
      for (int c = 0; c < in.value_dim; ++c) {
        double exact_output = 0, quantized_output = 0;
        for (int j = 0; j < keys; ++j) {
          exact_output += p[j] * in.values[static_cast<std::size_t>(chunk.start + j) * in.value_dim + c];
          quantized_output += p_tilde[j] * quantized_values[j][c];
        }
        exact_norm += exact_output * exact_output;
        difference_norm += (quantized_output - exact_output) * (quantized_output - exact_output);
      }
      if (exact_norm > 0) result.output_error = std::sqrt(difference_norm / exact_norm);
      results.push_back(result);
    }
  }
  return results;
}

}  // namespace tqlab
