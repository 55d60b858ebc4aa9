// Attention metrics for a block of consecutive queries of one head in one
// chunk, at BLAS speed: the exact attention is computed once (set_exact), then
// each quantization is measured against it (set_key_error, compare).
//
// Shapes (row-major floats): q: rows x key_dim, the block's queries; k, v:
// keys x key_dim and keys x value_dim, the chunk's first `keys` tokens, keys =
// first + rows (causal) or the chunk's length. Logits go through cblas_sgemm:
//   L = q k^T (rows x keys), once, in double (dgemm);  D = q dk^T with dk = k~ - k,
// per key error (sgemm), and the logit error scale * D enters in double
// (attention_compare.h). The
// output error P~ V~ - P V = (P~ - P) V + P~' dv, with dv = v~ - v and P~'
// zero on the exact tokens, is two more sgemms per comparison.
// The reference these are tested against is attention_reference.h.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "metrics/attention_compare.h"
#include "metrics/attention_geometry.h"

namespace tqlab {

class AttentionBlock {
 public:
  /// Exact attention of chunk-local queries [first, first + rows) of `chunk`.
  void set_exact(const ChunkGeometry& chunk, int first, int rows, bool causal, double scale, int key_dim,
                 int value_dim, const float* q, const float* k, const float* v);

  /// Keys the block's queries see in total: k and dk must hold this many rows.
  int keys() const { return keys_; }

  /// Logit errors for keys k + dk (dk: keys() x key_dim); kept until the next call.
  void set_key_error(const float* dk);

  /// One query's result: its attention error, and |P~ V~ - P V| / |P V|
  /// (nullopt when |P V| = 0).
  using Consumer = std::function<void(int row, const QueryAttentionError& error, std::optional<double> output_error)>;

  /// Measures the last key error with values v + dv (dv: keys() x value_dim),
  /// `exact` tokens keeping both exact, and calls consume(row, ...) for each row in order.
  void compare(const ExactTokens& exact, const float* dv, const Consumer& consume);

 private:
  ChunkGeometry chunk_;
  int first_ = 0, rows_ = 0, keys_ = 0, key_dim_ = 0, value_dim_ = 0;
  bool causal_ = true;
  double scale_ = 1;
  const float* q_ = nullptr;
  const float* v_ = nullptr;
  std::vector<double> queries_d_, keys_d_;      // the block's q and k in double, for the exact logits
  std::vector<double> logits_, probabilities_;  // rows x keys (scaled logits; entries past a row's keys unused)
  std::vector<float> probabilities_f_;          // rows x keys, P as the output sgemm takes it
  std::vector<int> argmax_;                     // rows
  std::vector<double> output_norm_;             // rows: |P V|
  std::vector<float> logit_error_;              // rows x keys: q dk^T, unscaled
  std::vector<float> change_, kept_;            // rows x keys: P~ - P, and P~ off the exact tokens
  std::vector<float> output_error_;             // rows x value_dim
  std::vector<double> delta_, p_tilde_, scratch_;  // keys: one row's scaled logit errors, P~, working space
};

}  // namespace tqlab
