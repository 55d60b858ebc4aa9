// vLLM's fp8 KV cache formats (method `vllm_fp8`): OCP FP8 E4M3FN codes with
// the scale vLLM uses.
//
//   scale=unit (default): one scale per layer that vLLM reads from the
//     checkpoint's k_scale / v_scale and sets to 1.0 when the checkpoint has
//     none; tqlab models that default, so code = fp8(x), rounded to nearest
//     even and saturated to ±448. This is preset `fp8` (keys and values) and
//     the keys of turboquant_k8v4, which cast keys to fp8 with no scale at all.
//     Sources: vllm/model_executor/layers/quantization/kv_cache.py,
//     BaseKVCacheMethod.process_weights_after_loading (the 1.0 default);
//     vllm/v1/attention/ops/triton_reshape_and_cache_flash.py,
//     reshape_and_cache_kernel_flash (x / k_scale, cast on store);
//     vllm/v1/attention/ops/triton_turboquant_store.py, _tq_fused_store_fp8.
//   scale=token_head: preset `fp8_per_token_head` (vLLM PR #38378): per (token,
//     kv head) vector, s = max(max|x| / 448, 1e-6) in float, code =
//     fp8(clamp(x · (1/s), -448, 448)), x~ = value(code) · s. Source:
//     vllm/v1/attention/ops/triton_reshape_and_cache_flash.py,
//     _reshape_cache_per_token_head and
//     triton_reshape_and_cache_flash_per_token_head_quant (its QUANT_MAX for fp8).
// Both follow Hopper-and-later GPUs (float8_e4m3fn). On Ampere/Ada (SM < 8.9) vLLM's
// TurboQuant kernels store k8v4 keys as Triton's fp8e4b15 instead; that is not modelled.
//
// Packed layout, per token (little-endian):
//   unit:       D code bytes                           -> 8 bits per value
//   token_head: D code bytes, then the fp32 scale s    -> 8 + 32/D bits (8.5 at D = 64)
// (vLLM keeps the per-token-head scales in a separate float32 array; the byte count is the same.)
#pragma once

#include <cstdint>
#include <string>

#include "quant/quantizer.h"

namespace tqlab {

enum class VllmFp8Scale : std::uint8_t { unit, token_head };

/// Every scale kind, in the order the scale= choices name them.
inline constexpr VllmFp8Scale kVllmFp8Scales[] = {VllmFp8Scale::unit, VllmFp8Scale::token_head};

/// "unit", "token_head".
const char* vllm_fp8_scale_name(VllmFp8Scale scale);

class VllmFp8Quantizer final : public Quantizer {
 public:
  explicit VllmFp8Quantizer(VllmFp8Scale scale) : scale_(scale) {}

  bool encodes_tokens_independently() const override { return true; }
  std::string spec() const override;
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  VllmFp8Scale scale_;
};

}  // namespace tqlab
