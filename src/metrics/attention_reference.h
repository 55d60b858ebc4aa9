// The attention metrics of one (sequence, query head) computed the obvious
// way, straight from the definitions of docs/SWEEP.md#metrics, in double: for each query, the
// logits with exact keys and with quantized keys (exact where the run keeps
// tokens exact), two softmaxes, and the metrics from them. Slow (no BLAS, no
// reuse); the reference that AttentionBlock and the sweep are tested against.
#pragma once

#include <optional>
#include <vector>

#include "metrics/attention_compare.h"
#include "metrics/attention_geometry.h"

namespace tqlab {

struct AttentionReferenceInput {
  int tokens = 0;
  int key_dim = 0;
  int value_dim = 0;
  const float* queries = nullptr;      ///< tokens x key_dim, one query head
  const float* keys = nullptr;         ///< tokens x key_dim
  const float* keys_quantized = nullptr;
  const float* values = nullptr;       ///< tokens x value_dim
  const float* values_quantized = nullptr;
  int chunk = 0;
  bool causal = true;
  double scale = 1;
  ExactTokens exact;
};

struct ReferenceQueryResult {
  int token = 0;                       ///< the query's position in the sequence
  QueryAttentionError error;
  std::optional<double> output_error;  ///< |P~ V~ - P V| / |P V|; nullopt when |P V| = 0
};

/// One result per query, in token order.
std::vector<ReferenceQueryResult> attention_reference(const AttentionReferenceInput& input);

}  // namespace tqlab
