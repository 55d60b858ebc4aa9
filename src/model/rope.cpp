#include "model/rope.h"

#include <cassert>
#include <cmath>
#include <numbers>

namespace tqlab {

std::vector<float> rope_inverse_frequencies(const RopeConfig& rope, int head_dim) {
  const int half = head_dim / 2;
  std::vector<float> inv_freq(static_cast<std::size_t>(half));
  // transformers: 1.0 / (base ** (arange(0, d, 2).float() / d)), every step in float32.
  const auto theta = static_cast<float>(rope.theta);
  for (int i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const auto power = static_cast<float>(std::pow(static_cast<double>(theta), static_cast<double>(exponent)));
    inv_freq[static_cast<std::size_t>(i)] = 1.0f / power;
  }
  const auto factor = static_cast<float>(rope.factor);
  switch (rope.scaling) {
    case RopeConfig::Scaling::none: break;
    case RopeConfig::Scaling::linear:
      for (float& value : inv_freq) value = value / factor;
      break;
    case RopeConfig::Scaling::llama3: {
      // _compute_llama3_parameters, operation for operation in float32.
      const double context = rope.original_max_position_embeddings;
      const auto low_wavelen = static_cast<float>(context / rope.low_freq_factor);
      const auto high_wavelen = static_cast<float>(context / rope.high_freq_factor);
      const auto low = static_cast<float>(rope.low_freq_factor);
      const auto span = static_cast<float>(rope.high_freq_factor - rope.low_freq_factor);
      const auto two_pi = static_cast<float>(2 * std::numbers::pi);
      for (float& value : inv_freq) {
        const float wavelen = two_pi / value;
        const float scaled = wavelen > low_wavelen ? value / factor : value;
        const float smooth = (static_cast<float>(context) / wavelen - low) / span;
        const float smoothed = (1.0f - smooth) * scaled / factor + smooth * scaled;
        const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
        value = medium ? smoothed : scaled;
      }
      break;
    }
    case RopeConfig::Scaling::factors:
      // ggml_rope_ext: theta = position * base^(-2i/d) / freq_factors[i].
      for (int i = 0; i < half; ++i) {
        inv_freq[static_cast<std::size_t>(i)] /= rope.frequency_factors.at(static_cast<std::size_t>(i));
      }
      break;
  }
  return inv_freq;
}

RopeTable make_rope_table(const RopeConfig& rope, int head_dim, int tokens) {
  RopeTable table;
  table.tokens = tokens;
  table.half = head_dim / 2;
  const std::vector<float> inv_freq = rope_inverse_frequencies(rope, head_dim);
  const auto size = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(table.half);
  table.cos.resize(size);
  table.sin.resize(size);
  for (int t = 0; t < tokens; ++t) {
    for (int i = 0; i < table.half; ++i) {
      const float angle = static_cast<float>(t) * inv_freq[static_cast<std::size_t>(i)];
      const std::size_t at =
          static_cast<std::size_t>(t) * static_cast<std::size_t>(table.half) + static_cast<std::size_t>(i);
      table.cos[at] = static_cast<float>(std::cos(static_cast<double>(angle)));
      table.sin[at] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  return table;
}

void apply_rope(const RopeTable& table, int tokens, int heads, int head_dim, std::int64_t row_stride, float* x) {
  assert(tokens <= table.tokens && head_dim == 2 * table.half);
  const int half = table.half;
  for (int t = 0; t < tokens; ++t) {
    const float* cos = table.cos.data() + static_cast<std::size_t>(t) * static_cast<std::size_t>(half);
    const float* sin = table.sin.data() + static_cast<std::size_t>(t) * static_cast<std::size_t>(half);
    float* row = x + t * row_stride;
    for (int h = 0; h < heads; ++h) {
      float* first = row + static_cast<std::ptrdiff_t>(h) * head_dim;
      float* second = first + half;
      for (int i = 0; i < half; ++i) {
        const float a = first[i];
        const float b = second[i];
        first[i] = a * cos[i] - b * sin[i];
        second[i] = b * cos[i] + a * sin[i];
      }
    }
  }
}

void apply_rope_reference(const std::vector<float>& inv_freq, int tokens, int heads, int head_dim,
                          std::int64_t row_stride, float* x) {
  const int half = head_dim / 2;
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      float* vector = x + t * row_stride + static_cast<std::ptrdiff_t>(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const double angle = static_cast<double>(t) * inv_freq[static_cast<std::size_t>(i)];
        const double a = vector[i];
        const double b = vector[i + half];
        vector[i] = static_cast<float>(a * std::cos(angle) - b * std::sin(angle));
        vector[i + half] = static_cast<float>(b * std::cos(angle) + a * std::sin(angle));
      }
    }
  }
}

}  // namespace tqlab
