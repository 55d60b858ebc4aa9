// vLLM's fp8 KV cache formats (rules and layout in vllm_fp8_quantizer.h).
#include "quant/vllm_fp8_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/fp8.h"
#include "quant/quantizer_support.h"

namespace tqlab {
namespace {

constexpr Fp8Format kFormat = Fp8Format::e4m3fn;
constexpr float kSmallestScale = 1e-6f;  // vLLM's floor on a per-token-head scale

std::size_t record_bytes(int dim, VllmFp8Scale scale) {
  return static_cast<std::size_t>(dim) + (scale == VllmFp8Scale::token_head ? sizeof(float) : 0);
}

}  // namespace

const char* vllm_fp8_scale_name(VllmFp8Scale scale) {
  switch (scale) {
    case VllmFp8Scale::unit: return "unit";
    case VllmFp8Scale::token_head: return "token_head";
  }
  return "?";
}

std::string VllmFp8Quantizer::spec() const {
  return scale_ == VllmFp8Scale::unit ? "vllm_fp8" : fmt::format("vllm_fp8:scale={}", vllm_fp8_scale_name(scale_));
}

EncodedTensor VllmFp8Quantizer::encode(std::int64_t tokens, int dim, const float* x,
                                       const QuantContext& context) const {
  require_finite(tokens, dim, x, context);
  const std::size_t record = record_bytes(dim, scale_);
  const float largest = fp8_max(kFormat);
  EncodedTensor encoded{tokens, dim, std::vector<std::uint8_t>(static_cast<std::size_t>(tokens) * record)};
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* row = x + t * dim;
    std::uint8_t* out = encoded.bytes.data() + static_cast<std::size_t>(t) * record;
    if (scale_ == VllmFp8Scale::unit) {
      // float_to_fp8 saturates at ±448, as CUDA's satfinite conversion does.
      for (int j = 0; j < dim; ++j) out[j] = float_to_fp8(row[j], kFormat);
      continue;
    }
    float amax = 0.0f;
    for (int j = 0; j < dim; ++j) amax = std::max(amax, std::fabs(row[j]));
    const float scale = std::max(amax / largest, kSmallestScale);
    // vLLM multiplies by the float reciprocal (not a division): the codes follow it.
    const float inverse = 1.0f / scale;
    for (int j = 0; j < dim; ++j) out[j] = float_to_fp8(std::clamp(row[j] * inverse, -largest, largest), kFormat);
    std::memcpy(out + dim, &scale, sizeof(float));
  }
  return encoded;
}

void VllmFp8Quantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  const int dim = encoded.dim;
  const std::size_t record = record_bytes(dim, scale_);
  require_encoded_size(encoded, static_cast<std::size_t>(encoded.tokens) * record, spec());
  for (std::int64_t t = 0; t < encoded.tokens; ++t) {
    const std::uint8_t* in = encoded.bytes.data() + static_cast<std::size_t>(t) * record;
    float scale = 1.0f;
    if (scale_ == VllmFp8Scale::token_head) {
      std::memcpy(&scale, in + dim, sizeof(float));
      // encode() writes s >= 1e-6 and finite.
      if (!(scale >= kSmallestScale) || !std::isfinite(scale)) {
        fail_corrupt(spec(), context, fmt::format("the vector at token {} stores scale {}", t, scale));
      }
    }
    float* row = out + t * dim;
    for (int j = 0; j < dim; ++j) row[j] = fp8_to_float(in[j], kFormat) * scale;
  }
  // encode() saturates, so a NaN code is corrupt, and so is a product that overflows.
  require_finite_decoded(spec(), context, encoded.tokens, dim, out);
}

}  // namespace tqlab
