// The whole forward pass of model/transformer.h in plain loops and double
// precision, for tests: no sgemm, no blocks, no threads, the KV cache's exact
// tokens decided per (query, key) by ExactTokens::ranges, as the sweep
// decides them. The fast forward is held to it on random checkpoints of
// every family (tests/model_forward_test.cpp); it is far too slow for real models.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/kv_hook.h"
#include "model/transformer.h"

namespace tqlab {

/// What the reference computes for one chunk.
struct ReferenceForward {
  std::vector<float> logits;  ///< tokens x vocab_size
  /// Post-RoPE q, k, v per layer, token-major as forward() hands them to on_qkv.
  std::vector<std::vector<float>> q, k, v;
};

/// The chunk `tokens` through `model`; with `cache`, keys and values pass the
/// same fake_quantize_rows per (layer, kv head) as the hook's.
ReferenceForward forward_reference(const Transformer& model, std::span<const std::int32_t> tokens,
                                   const KvCacheQuantization* cache = nullptr);

}  // namespace tqlab
