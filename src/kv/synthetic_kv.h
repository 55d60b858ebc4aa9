// KV-like synthetic tensors with the structure real models show, for tests
// and demos when no real dump is at hand (`tqlab synth`).
//
// Per layer, sequence and kv head (d = head dim, RoPE pairs (2p, 2p+1) with
// frequency 10000^(-2p/d), as llama2.c and Meta's Llama lay them out):
// - keys: k_t = RoPE_t(mu + sigma * z_t), z_t ~ N(0, I). A few low-frequency
//   RoPE pairs carry a large offset mu and spread sigma: the outlier channels
//   of real keys, paired as RoPE pairs are, which rotation rotates with the
//   position (post-RoPE position dependence).
// - values: v_t = sigma_v * z'_t, scaled so that the mean key norm is 10-30x
//   the mean value norm; the first layer's ratio is far higher (60-120x), as
//   in real models.
// - queries: query t of q head h attends mostly to one earlier key j(t): the
//   first token (an attention sink), a recent token, or a random earlier one;
//   q_t = s_t * ((k_j - mean_k) + noise), with s_t chosen so that key j
//   takes 30-90% of the causal softmax(q.k/sqrt(d)) whatever the context
//   length: attention is peaked, with a sink on the first token.
// Deterministic for a seed: every draw comes from our own generator.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace tqlab {

struct SyntheticKvOptions {
  int layers = 4;
  int kv_heads = 4;
  int q_heads = 8;  ///< a multiple of kv_heads (grouped-query attention)
  int tokens = 1024;
  int seqs = 1;
  int dim = 128;    ///< head dim, even (RoPE pairs)
  DType dtype = DType::f16;
  std::uint64_t seed = 0;
};

/// One generated tensor, float values in C order.
struct SyntheticTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

struct SyntheticKv {
  std::string layout;  ///< "head token dim" for one sequence, else "seq head token dim"
  std::vector<SyntheticTensor> tensors;  ///< layers.{l}.q, .k, .v for each layer
  std::map<std::string, std::string> metadata;
};

/// Validates the options (InputError naming the option) and generates the tensors.
SyntheticKv generate_synthetic_kv(const SyntheticKvOptions& options);

/// Generates and writes to `path` (.safetensors or .npz), atomically.
void write_synthetic_kv(const std::string& path, const SyntheticKvOptions& options);

}  // namespace tqlab
