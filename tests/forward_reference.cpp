#include "forward_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kv/fake_quantize.h"

namespace tqlab {
namespace {

using Matrix = std::vector<double>;  // row-major

Matrix rms_norm_rows(const Matrix& x, int width, const std::vector<float>& weight, double eps) {
  Matrix y(x.size());
  for (std::size_t row = 0; row < x.size() / static_cast<std::size_t>(width); ++row) {
    double sum = 0;
    for (int i = 0; i < width; ++i) sum += x[row * width + i] * x[row * width + i];
    const double inverse = 1.0 / std::sqrt(sum / width + eps);
    for (int i = 0; i < width; ++i)
      y[row * width + i] = weight[static_cast<std::size_t>(i)] * x[row * width + i] * inverse;
  }
  return y;
}

Matrix linear_rows(const Matrix& x, int tokens, const WeightMatrix& w, const std::vector<float>& bias) {
  Matrix y(static_cast<std::size_t>(tokens) * static_cast<std::size_t>(w.rows));
  std::vector<float> row;
  for (std::int64_t j = 0; j < w.rows; ++j) {
    const float* weights = w.rows_as_float(j, 1, row);
    for (int t = 0; t < tokens; ++t) {
      double sum = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(j)];
      for (std::int64_t l = 0; l < w.cols; ++l) sum += x[t * w.cols + l] * weights[l];
      y[t * w.rows + j] = sum;
    }
  }
  return y;
}

void rope_rows(Matrix& x, int tokens, int heads, int dim, const std::vector<float>& inv_freq) {
  const int half = dim / 2;
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      double* v = x.data() + (static_cast<std::size_t>(t) * heads + h) * dim;
      for (int i = 0; i < half; ++i) {
        const double angle = static_cast<double>(t) * inv_freq[static_cast<std::size_t>(i)];
        const double a = v[i], b = v[i + half];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
}

std::vector<float> to_floats(const Matrix& x) { return {x.begin(), x.end()}; }

}  // namespace

ReferenceForward forward_reference(const Transformer& model, std::span<const std::int32_t> tokens,
                                   const KvCacheQuantization* cache) {
  const ModelConfig& config = model.config();
  const int n = static_cast<int>(tokens.size());
  const int hidden = config.hidden_size, dim = config.head_dim;
  const int group = config.q_heads / config.kv_heads;
  const std::vector<float> inv_freq = rope_inverse_frequencies(config.rope, dim);
  ReferenceForward out;

  Matrix x(static_cast<std::size_t>(n) * hidden);
  std::vector<float> row;
  for (int t = 0; t < n; ++t) {
    const float* embedding = model.embedding().rows_as_float(tokens[static_cast<std::size_t>(t)], 1, row);
    for (int i = 0; i < hidden; ++i) x[static_cast<std::size_t>(t) * hidden + i] = embedding[i];
  }
  for (int layer = 0; layer < config.layers; ++layer) {
    const LayerWeights& w = model.layers()[static_cast<std::size_t>(layer)];
    const Matrix h = rms_norm_rows(x, hidden, w.input_norm, config.rms_norm_eps);
    Matrix q = linear_rows(h, n, w.q, w.q_bias);
    Matrix k = linear_rows(h, n, w.k, w.k_bias);
    Matrix v = linear_rows(h, n, w.v, w.v_bias);
    if (config.qk_norm) {
      q = rms_norm_rows(q, dim, w.q_norm, config.rms_norm_eps);
      k = rms_norm_rows(k, dim, w.k_norm, config.rms_norm_eps);
    }
    rope_rows(q, n, config.q_heads, dim, inv_freq);
    rope_rows(k, n, config.kv_heads, dim, inv_freq);
    out.q.push_back(to_floats(q));
    out.k.push_back(to_floats(k));
    out.v.push_back(to_floats(v));

    // The cache: per kv head, the chunk's float keys and values through fake_quantize_rows.
    Matrix k_cache = k, v_cache = v;
    if (cache != nullptr) {
      for (int role = 0; role < 2; ++role) {
        const std::vector<float>& exact = role == 0 ? out.k.back() : out.v.back();
        Matrix& quantized = role == 0 ? k_cache : v_cache;
        for (int head = 0; head < config.kv_heads; ++head) {
          std::vector<float> rows(static_cast<std::size_t>(n) * dim), decoded(rows.size());
          for (int t = 0; t < n; ++t) {
            for (int d = 0; d < dim; ++d)
              rows[static_cast<std::size_t>(t) * dim + d] =
                  exact[(static_cast<std::size_t>(t) * config.kv_heads + head) * dim + d];
          }
          const Quantizer& quantizer =
              *(role == 0 ? cache->key : cache->value)[static_cast<std::size_t>(layer)][static_cast<std::size_t>(head)];
          fake_quantize_rows(quantizer, {cache->seed, role == 0 ? Role::key : Role::value, layer, head}, n, dim,
                             rows.data(), decoded.data(), "reference");
          for (int t = 0; t < n; ++t) {
            for (int d = 0; d < dim; ++d)
              quantized[(static_cast<std::size_t>(t) * config.kv_heads + head) * dim + d] =
                  decoded[static_cast<std::size_t>(t) * dim + d];
          }
        }
      }
    }
    // Attention: query i reads key j exact when ExactTokens puts j in one of its ranges.
    Matrix attention(static_cast<std::size_t>(n) * config.q_heads * dim);
    const ChunkGeometry chunk{0, n};
    std::vector<double> logits(static_cast<std::size_t>(n));
    for (int head = 0; head < config.q_heads; ++head) {
      const int kv_head = head / group;
      for (int i = 0; i < n; ++i) {
        const auto ranges =
            cache != nullptr ? cache->exact.ranges(chunk, i, i + 1) : decltype(ExactTokens{}.ranges(chunk, 0, 1)){};
        const auto exact = [&](int j) {
          if (cache == nullptr) return true;
          return (j >= ranges[0].first && j < ranges[0].second) || (j >= ranges[1].first && j < ranges[1].second);
        };
        const auto key = [&](const Matrix& m, int j) {
          return m.data() + (static_cast<std::size_t>(j) * config.kv_heads + kv_head) * dim;
        };
        const double* query = q.data() + (static_cast<std::size_t>(i) * config.q_heads + head) * dim;
        double largest = -std::numeric_limits<double>::infinity();
        for (int j = 0; j <= i; ++j) {
          const double* kj = key(exact(j) ? k : k_cache, j);
          double dot = 0;
          for (int d = 0; d < dim; ++d) dot += query[d] * kj[d];
          logits[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(dim));
          largest = std::max(largest, logits[static_cast<std::size_t>(j)]);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += std::exp(logits[static_cast<std::size_t>(j)] - largest);
        double* o = attention.data() + (static_cast<std::size_t>(i) * config.q_heads + head) * dim;
        for (int j = 0; j <= i; ++j) {
          const double weight = std::exp(logits[static_cast<std::size_t>(j)] - largest) / sum;
          const double* vj = key(exact(j) ? v : v_cache, j);
          for (int d = 0; d < dim; ++d) o[d] += weight * vj[d];
        }
      }
    }
    const Matrix projected = linear_rows(attention, n, w.o, w.o_bias);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += projected[i];
    const Matrix h2 = rms_norm_rows(x, hidden, w.post_norm, config.rms_norm_eps);
    Matrix gate = linear_rows(h2, n, w.gate, w.gate_bias);
    const Matrix up = linear_rows(h2, n, w.up, w.up_bias);
    for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
    const Matrix down = linear_rows(gate, n, w.down, w.down_bias);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  const Matrix normed = rms_norm_rows(x, hidden, model.final_norm(), config.rms_norm_eps);
  out.logits = to_floats(linear_rows(normed, n, model.lm_head(), {}));
  return out;
}

}  // namespace tqlab
