// Causal grouped-query attention of one layer over one chunk, with the KV
// cache the queries read possibly fake-quantized (model/kv_hook.h).
//
//   out[t, h] = sum_{j <= t} softmax_j(scale * q[t, h] . k[j, g]) v[j, g],  g = h / (q_heads / kv_heads)
//
// Which keys and values a query reads: the cache's (k_cache, v_cache), except
// that with a prefill rule "exact C" (engine/engine.h) query t reads keys
// C floor(t / C)..t exact (PrefillRule::first_exact_key, which an engine may
// refine), and that with a recent window of W tokens (ExactTokens, window_mode recent)
// query t reads the exact ones (k, v) for keys t-W+1..t, as a cache that holds
// its W most recent tokens unquantized while decoding. Sinks and a tail window
// are the same for every query: the hook writes the exact rows into the cache
// before attention, so they need nothing here. With k_cache == k and
// v_cache == v (an unquantized cache) the window changes nothing.
//
// Work items: (q head, block of kAttentionQueryRows queries). A block's scores
// come from one sgemm against every key up to its last query (the entries
// after each query are masked out), the softmax is taken in double, and the
// output is one or two more sgemms (two when a recent window mixes exact and
// quantized values). Layouts: q is tokens x q_stride with head h at column
// h * head_dim; k, v, k_cache, v_cache are tokens x kv_stride with kv head g
// at column g * head_dim; out is tokens x q_stride like q.
#pragma once

#include <cstdint>

#include "engine/engine.h"
#include "model/workers.h"

namespace tqlab {

inline constexpr int kAttentionQueryRows = 64;

struct AttentionInput {
  int tokens = 0;
  int q_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  float scale = 1.0f;  ///< logit scale, 1/sqrt(head_dim)
  const float* q = nullptr;
  std::int64_t q_stride = 0;
  const float* k = nullptr;  ///< exact keys
  const float* v = nullptr;  ///< exact values
  const float* k_cache = nullptr;  ///< the keys the cache holds (== k when exact)
  const float* v_cache = nullptr;  ///< the values the cache holds (== v when exact)
  std::int64_t kv_stride = 0;
  int recent_window = 0;  ///< W > 0: query t reads keys/values t-W+1..t exact
  PrefillRule prefill;    ///< "exact C": query t reads its own prefill piece's keys/values exact
};

/// Writes the attention output of every query head into `out` (tokens x q_stride).
void causal_attention(const AttentionInput& input, float* out, Workers& workers);

/// The same in plain loops (double throughout; which of k/k_cache a query reads
/// decided per key): the reference causal_attention is held to.
void causal_attention_reference(const AttentionInput& input, float* out);

}  // namespace tqlab
