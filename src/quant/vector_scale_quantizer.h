// One fp32 scale per stored vector (per token and kv head): vLLM's per-token-head KV caches,
// int8 and fp8_e4m3:scale=vector.
//
// Source: vLLM PR #38378 ("KV cache per-token-head INT8/FP8 quantization"), the Triton kernel
// _reshape_cache_per_token_head in vllm/v1/attention/ops/triton_reshape_and_cache_flash.py:
//   scale = max(max|x| / Q, 1e-6) in fp32, Q = 127 (int8) or 448 (fp8 E4M3);
//   c = clamp(x * (1 / scale), -128, 127) resp. (-448, 448), stored by the kernel's store into the
//   cache's element type: for int8 that conversion truncates toward zero (the kernel has no explicit
//   rounding), for fp8 E4M3 it rounds to nearest even;
//   x~ = c * scale.
// (vLLM computes 1 / scale with the GPU's fast division; tqlab uses IEEE division.)
//
// Layout per vector of dim values: the fp32 scale (4 bytes, little-endian), then dim 1-byte codes
// (int8 two's complement, resp. OCP E4M3FN) -> 8 + 32/dim bits/value (8.25 at dim 128).
#pragma once

#include <cstdint>
#include <string>

#include "quant/quantizer.h"

namespace tqlab {

enum class VectorScaleElement : std::uint8_t { int8, fp8_e4m3 };

class VectorScaleQuantizer final : public Quantizer {
 public:
  explicit VectorScaleQuantizer(VectorScaleElement element) : element_(element) {}

  bool encodes_tokens_independently() const override { return true; }
  std::string spec() const override;
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  VectorScaleElement element_;
};

}  // namespace tqlab
