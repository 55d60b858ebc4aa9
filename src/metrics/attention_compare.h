// One query's attention with exact keys against the same with quantized keys
// (docs/SWEEP.md#metrics): the probabilities P over the keys the query attends,
// P~ with each logit moved by its error delta, and what separates them.
//
// The logits are l_j = scale * q.k_j and l~_j = l_j + delta_j with
// delta_j = scale * q.(k~_j - k_j), computed from the key error directly so
// that a small error is not lost in the rounding of two large logits. Sums run
// in double:
//   KL(P || P~) = log sum_j p_j e^{delta_j} - sum_j p_j delta_j,
// the logarithm taken as log1p(sum_j p_j expm1(delta_j)) when P~ is close to P
// (exact to double precision even when KL is 1e-12), and as the log of the
// positive sum when it is not (where 1 + sum p expm1 would cancel: the keys
// that held P's mass losing nearly all of it).
#pragma once

namespace tqlab {

/// p[j] = softmax(logits)[j], j < keys, in double; returns the arg-max (the
/// lowest index among equal logits). keys >= 1.
int exact_softmax(int keys, const double* logits, double* p);

/// What the key error did to one query's attention distribution.
struct QueryAttentionError {
  double kl = 0;              ///< KL(P || P~), nats
  bool top1 = true;           ///< arg-max of P~ is P's arg-max
  bool top5 = true;           ///< P's arg-max is among the 5 largest of P~ (ties: lower index first)
  double cosine = 1;          ///< <P, P~> / (|P| |P~|)
  double ip_bias = 0;         ///< mean of delta_j over the attended keys (logit units)
  double ip_mean_square = 0;  ///< mean of delta_j^2 over the attended keys
};

/// Compares P (p, from exact_softmax of `logits`, with arg-max `exact_argmax`)
/// with P~ for logits + delta, and writes P~ to p_tilde; `scratch` is working
/// space. All arrays: `keys` doubles. The definition, one plain pass per
/// quantity (what the fast form is tested against).
QueryAttentionError compare_query_attention_reference(int keys, const double* logits, const double* p, int exact_argmax,
                                                      const double* delta, double* p_tilde, double* scratch);

/// compare_query_attention_reference, bit for bit, fused into three passes
/// over the keys and run in the widest instruction-set form the CPU has
/// (core/kernel_set.h; attention_compare_fused.inc).
QueryAttentionError compare_query_attention(int keys, const double* logits, const double* p, int exact_argmax,
                                            const double* delta, double* p_tilde, double* scratch);

/// delta[j] = scale * double(logit_errors[j]) for j < keys: a query's scaled
/// logit errors from the block's float products (attention_block.h).
void scale_logit_errors(int keys, double scale, const float* logit_errors, double* delta);

/// change[j] = float(p_tilde[j] - p[j]) and kept[j] = float(p_tilde[j]) for
/// j < keys: one query's row of the block's output products (attention_block.h).
void probability_changes(int keys, const double* p, const double* p_tilde, float* change, float* kept);

}  // namespace tqlab
