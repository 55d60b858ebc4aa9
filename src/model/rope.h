// Rotary position embedding as Hugging Face transformers applies it
// (modeling_rope_utils.py, modeling_llama.py: rotate_half, apply_rotary_pos_emb).
//
// Frequencies, in float32 operations in transformers' order so that the same
// floats come out: inv_freq[i] = 1 / theta^(2i / d) for i < d/2 (d = head_dim),
// then
//   linear:  inv_freq[i] / factor;
//   llama3:  with wavelen = 2 pi / inv_freq[i] and the trained context L:
//            wavelen < L / high_freq_factor: unchanged (high frequencies);
//            wavelen > L / low_freq_factor: divided by factor (low frequencies);
//            between: (1 - s) inv / factor + s inv, s = (L / wavelen - low) / (high - low).
// Angles: angle = float(position) * inv_freq[i] rounded to float, its cos and
// sin rounded to float (transformers computes them in float32 too).
//
// Rotation, "rotate half": channel i pairs with channel i + d/2 (not 2i with
// 2i + 1, the interleaved convention of Meta's original code). For i < d/2,
// with c = cos, s = sin of position t's angle i:
//   x'[i]       = x[i] c - x[i + d/2] s
//   x'[i + d/2] = x[i + d/2] c + x[i] s
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace tqlab {

/// inv_freq: head_dim / 2 floats, as transformers computes them for `rope`.
std::vector<float> rope_inverse_frequencies(const RopeConfig& rope, int head_dim);

/// cos and sin of every (position, frequency) for positions [0, tokens).
struct RopeTable {
  int tokens = 0;
  int half = 0;            ///< head_dim / 2
  std::vector<float> cos;  ///< tokens x half
  std::vector<float> sin;  ///< tokens x half
};

RopeTable make_rope_table(const RopeConfig& rope, int head_dim, int tokens);

/// Rotates x in place. x: `tokens` rows, row t at x + t * row_stride floats,
/// holding `heads` vectors of head_dim floats side by side (head h at column
/// h * head_dim); row t is at position t. Requires tokens <= table.tokens and
/// head_dim == 2 * table.half.
void apply_rope(const RopeTable& table, int tokens, int heads, int head_dim, std::int64_t row_stride, float* x);

/// The same rotation in double from the angle position * inv_freq[i], for
/// tests: the reference apply_rope is held to.
void apply_rope_reference(const std::vector<float>& inv_freq, int tokens, int heads, int head_dim,
                          std::int64_t row_stride, float* x);

}  // namespace tqlab
