// vLLM's TurboQuant value format (method `vllm_uniform`): plain uniform
// min/max quantization of each value vector with an fp16 scale and zero — the
// values of every TurboQuant preset (turboquant_k8v4, turboquant_4bit_nc,
// turboquant_k3v4_nc with b = 4; turboquant_3bit_nc with b = 3). No rotation.
//
// Source (docs/SOURCES.md, "vLLM's KV cache presets"): vLLM,
// vllm/v1/attention/ops/triton_turboquant_store.py, _store_quantized_value;
// decoding as _tq_full_dequant_kv and _tq_decode_stage1 in
// vllm/v1/attention/ops/triton_turboquant_decode.py. For one vector v of D
// values, in float, with L = 2^b - 1 levels above zero:
//   lo = min v, hi = max v; s = (hi - lo) / L, replaced by 1e-8 unless s > 1e-8;
//   code_j = min(L, trunc((v_j - lo) / s + 0.5))   (with the float s, not its fp16 copy);
//   store the codes, fp16(s) and fp16(lo).
// Decoding: v~_j = code_j · fp16(s) + fp16(lo). The codes use the float scale and
// decoding the fp16 one, as in vLLM; so an all-equal vector decodes to fp16(lo).
//
// Packed layout (vllm_slot.h), per token: ceil(D·b/8) bytes of b-bit codes, LSB
// first, then fp16 scale and fp16 zero (lo), little-endian; tokens one after
// another. Example: D = 128, b = 4 -> 64 + 4 = 68 bytes = 4.25 bits per value
// (vLLM's value_packed_size); D = 64, b = 3 -> 24 + 4 = 28 bytes = 3.5 bits.
#pragma once

#include <string>

#include "quant/quantizer.h"

namespace tqlab {

class VllmValueQuantizer final : public Quantizer {
 public:
  static constexpr int kMinBits = 3;  ///< vLLM's value widths (its kernels: 3 and 4)
  static constexpr int kMaxBits = 4;

  explicit VllmValueQuantizer(int bits) : bits_(bits) {}

  bool encodes_tokens_independently() const override { return true; }
  std::string spec() const override;
  /// D must be a multiple of 8 (vLLM packs 3-bit codes eight at a time).
  void check_dim(int dim) const override;
  /// A vector whose fp16 scale or zero would overflow (|lo| or (hi - lo)/L beyond
  /// 65504) is an InputError naming the token.
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  int bits_;
};

}  // namespace tqlab
