// llama.cpp's CPU flash attention for one query head over one chunk, rule by rule
// (ggml/src/ggml-cpu/ops.cpp):
//
//   ggml_compute_forward_flash_attn_ext_f16_one_chunk, per query t:
//     q~ = the query converted to K's vec-dot type (engine/llamacpp_cache_types.h)
//     S = 0, M = -inf, acc = 0                       (acc in f16 when V is f16, else f32)
//     for each key j <= t, in order:
//       s = scale * dot_K(k_j, q~)                   (float)
//       if s > M: ms = expf(M - s), M = s, acc *= ms (ggml_vec_scale_f16 / _f32), vs = 1
//       else:     ms = 1, vs = expf(s - M)
//       acc += vs * v_j                              (ggml_vec_mad_f16: fused in f32, rounded to f16;
//                                                     ggml_vec_mad_f32: fused in f32)
//       S = S * ms + vs
//     out = acc * (1 / S)
//   ggml_compute_forward_flash_attn_ext_tiled, taken instead when K and V are both f32 or
//   both f16 and the batch holds at least GGML_FA_TILE_Q (64) queries
//   (ggml_compute_forward_flash_attn_ext_f16): the query stays f32 and values are summed
//   in f32 (kTiledMinQueries).
//
// Which keys a query reads exact (PrefillRule "exact C"): keys from the start of its
// piece on come from k_exact / v_exact instead of the cache; everything else is the same.
#pragma once

#include "engine/engine.h"
#include "engine/llamacpp_cache_types.h"

namespace tqlab {

/// GGML_FA_TILE_Q (ggml-cpu/common.h): the batch size from which same-type f32/f16
/// caches take the tiled kernel.
inline constexpr int kTiledMinQueries = 64;

/// One query head's attention inputs; every row is dim floats in the order and
/// rotation the cache stores (rows are token t at t * dim).
struct FlashAttentionHead {
  int tokens = 0;
  int dim = 0;
  float scale = 1.0f;
  const float* q = nullptr;            ///< tokens x dim, f32
  const float* k_cache = nullptr;      ///< tokens x dim, decoded as stored
  const float* k_minimums = nullptr;   ///< tokens x dim/32 (q4_1 keys), or null
  const float* v_cache = nullptr;      ///< tokens x dim, decoded as stored
  const float* k_exact = nullptr;      ///< tokens x dim (read by PrefillRule "exact C")
  const float* v_exact = nullptr;
  QueryType query = QueryType::f32;    ///< what q is converted to
  bool f16_accumulation = false;       ///< V is f16 and the one-chunk kernel runs
  PrefillRule prefill;
};

/// out: tokens x dim.
void flash_attention_head(const FlashAttentionHead& head, float* out);

}  // namespace tqlab
