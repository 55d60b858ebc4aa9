// vLLM's Lloyd–Max codebook for TurboQuant keys: the 2^b levels a rotated
// unit key coordinate is rounded to in vLLM's TurboQuant KV cache, and the
// 2^b - 1 decision midpoints its store kernel bucketizes with.
//
// Source (docs/SOURCES.md, "vLLM's KV cache presets"): vLLM,
// vllm/model_executor/layers/quantization/turboquant/centroids.py,
// solve_lloyd_max(d, bits) and get_centroids(d, bits); the midpoints as
// vllm/v1/attention/backends/turboquant_attn.py, TurboQuantAttentionImpl._ensure_on_device,
// forms them. The algorithm, step by step, as vLLM runs it in double precision:
//   σ² = 1/d, σ = sqrt(σ²); pdf(x) = (1 / sqrt(2π σ²)) · exp(−x·x / (2σ²))  (N(0, 1/d),
//   the Gaussian limit of a rotated coordinate, not the exact Beta marginal of tqlab's `tq`);
//   start: c_i = lo + (hi − lo)(i + ½)/2^b, lo = −3.5σ, hi = 3.5σ;
//   one round: boundaries t_i = (c_i + c_{i+1})/2, cells [t_{i−1}, t_i] with t_{−1} = 3·lo and
//   t_{2^b−1} = 3·hi; c'_i = ∫x·pdf / ∫pdf over the cell, each integral by the trapezoid rule on
//   200 equal panels (c'_i = c_i when the denominator is <= 1e-15);
//   at most 200 rounds; when no level moves by 1e-10 or more the loop stops and that round's
//   levels c' are discarded (the levels of the previous round are kept).
// The levels are then rounded to float; midpoint i is (c_i + c_{i+1}) / 2 computed in float.
// The 3-bit levels come out as ±0.24498, ±0.75565, ±1.34318, ±2.15035 times σ (Max's 1960 table for
// N(0, 1): ±0.2451, ±0.7560, ±1.3439, ±2.1520); the 4-bit solve stops at the 200-round cap.
#pragma once

#include <vector>

namespace tqlab {

struct VllmCodebook {
  std::vector<float> levels;     ///< 2^bits centroids, ascending
  std::vector<float> midpoints;  ///< 2^bits - 1 decision boundaries, ascending
};

/// vLLM's codebook for dimension d (>= 1) and 3 <= bits <= 4 (the key widths its presets use;
/// the solver itself takes 1..8). Computed once per (d, bits) and cached; thread-safe.
const VllmCodebook& vllm_codebook(int d, int bits);

/// The same solver without the cache (for tests). 1 <= bits <= 8.
VllmCodebook solve_vllm_codebook(int d, int bits);

}  // namespace tqlab
