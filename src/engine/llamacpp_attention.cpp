#include "engine/llamacpp_attention.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/dtype.h"

namespace tqlab {
namespace {

float round_to_half(float x) { return half_to_float(float_to_half(x)); }

}  // namespace

void flash_attention_head(const FlashAttentionHead& head, float* out) {
  const int dim = head.dim;
  const auto row = [dim](const float* base, int t) { return base + static_cast<std::ptrdiff_t>(t) * dim; };
  const int blocks = dim / 32;
  ConvertedQuery query;
  std::vector<float> acc(static_cast<std::size_t>(dim));
  for (int t = 0; t < head.tokens; ++t) {
    convert_query(head.query, dim, row(head.q, t), query);
    const int first_exact = head.prefill.first_exact_key(t, head.tokens);
    float sum = 0.0f;
    float max = -std::numeric_limits<float>::infinity();
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int j = 0; j <= t; ++j) {
      const bool exact = j >= first_exact;
      const float* key = exact ? row(head.k_exact, j) : row(head.k_cache, j);
      const bool has_minimums = !exact && head.k_minimums != nullptr;
      const float* minimums = has_minimums ? head.k_minimums + static_cast<std::ptrdiff_t>(j) * blocks : nullptr;
      const float* value = exact ? row(head.v_exact, j) : row(head.v_cache, j);
      const float s = key_query_dot(dim, key, minimums, query) * head.scale;
      float ms = 1.0f;
      float vs = 1.0f;
      if (s > max) {
        ms = std::exp(max - s);
        max = s;
        for (float& a : acc) a = head.f16_accumulation ? round_to_half(a * ms) : a * ms;
      } else {
        vs = std::exp(s - max);
      }
      for (int d = 0; d < dim; ++d) {
        const float fused = std::fma(value[d], vs, acc[static_cast<std::size_t>(d)]);
        acc[static_cast<std::size_t>(d)] = head.f16_accumulation ? round_to_half(fused) : fused;
      }
      sum = sum * ms + vs;
    }
    const float inverse = sum == 0.0f ? 0.0f : 1.0f / sum;
    float* o = out + static_cast<std::ptrdiff_t>(t) * dim;
    for (int d = 0; d < dim; ++d) o[d] = acc[static_cast<std::size_t>(d)] * inverse;
  }
}

}  // namespace tqlab
