// vLLM's TurboQuant key format (method `vllm_tq_key`): the keys of its presets
// turboquant_4bit_nc, turboquant_k3v4_nc and turboquant_3bit_nc.
//
// Source (docs/SOURCES.md, "vLLM's KV cache presets"): vLLM,
// vllm/v1/attention/ops/triton_turboquant_store.py, triton_turboquant_store
// (MSE path) and _tq_fused_store_mse; decoding as _tq_full_dequant_kv and
// _tq_decode_stage1 in vllm/v1/attention/ops/triton_turboquant_decode.py do it;
// the rotation from vllm/v1/attention/backends/turboquant_attn.py, _build_hadamard.
// For one key k of D values (D a power of two, >= 8), in float:
//   1. n = ‖k‖; x = k / (n + 1e-8)  (the norm is stored, not n + 1e-8);
//   2. y = H x / sqrt(D), H the Sylvester Hadamard matrix (H_ij = (-1)^popcount(i & j)),
//      with no random signs and the same matrix for every layer and head (the seed is unused);
//   3. code_j = the number of midpoints m of vllm_codebook(D, b) with y_j >= m
//      (vLLM's binary search: a value on a midpoint goes up);
//   4. store the codes and fp16(n).
// Decoding: c_j = level(code_j); with `nc` (norm correction, the `_nc` presets)
// c <- c / sqrt(Σ c_j² + 1e-16); k~ = fp16(n) · H c / sqrt(D). QJL is left out, as in vLLM.
// vLLM rounds the decoded key to fp16 on one of its paths and scores in the
// rotated domain on another; tqlab returns the float value both approximate.
//
// Packed layout (vllm_slot.h), per token: ceil(D·b/8) bytes of b-bit codes, LSB
// first, then the fp16 norm, little-endian; tokens one after another.
// Example: D = 64, b = 3 -> 24 + 2 = 26 bytes per vector = 3.25 bits per value
// (vLLM's key_packed_size); D = 128, b = 4 -> 66 bytes = 4.125 bits.
#pragma once

#include <string>

#include "quant/quantizer.h"

namespace tqlab {

class VllmKeyQuantizer final : public Quantizer {
 public:
  static constexpr int kMinBits = 3;  ///< vLLM's MSE key widths (its presets: 3 and 4)
  static constexpr int kMaxBits = 4;

  VllmKeyQuantizer(int bits, bool norm_correction) : bits_(bits), norm_correction_(norm_correction) {}

  bool encodes_tokens_independently() const override { return true; }
  std::string spec() const override;
  /// D must be a power of two (vLLM's Hadamard matrix) of at least 8 (its 3-bit packing).
  void check_dim(int dim) const override;
  /// A key whose norm exceeds fp16's range (65504) is an InputError naming the token.
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  int bits_;
  bool norm_correction_;
};

}  // namespace tqlab
