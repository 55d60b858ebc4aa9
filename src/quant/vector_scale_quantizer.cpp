// Per-vector scaled int8 / fp8 (vector_scale_quantizer.h), after vLLM's per-token-head kernel.
#include "quant/vector_scale_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/fp8.h"
#include "quant/quantizer_support.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

constexpr float kMinScale = 1e-6f;  // vLLM's floor on the scale

float code_max(VectorScaleElement element) { return element == VectorScaleElement::int8 ? 127.0f : 448.0f; }

std::uint8_t encode_value(float scaled, VectorScaleElement element) {
  if (element == VectorScaleElement::int8) {
    // Clamped to -128..127, then truncated toward zero as the kernel's float -> int8 store does.
    const float clamped = std::clamp(scaled, -128.0f, 127.0f);
    return static_cast<std::uint8_t>(static_cast<std::int8_t>(clamped));
  }
  return float_to_fp8(std::clamp(scaled, -448.0f, 448.0f), Fp8Format::e4m3fn);
}

float decode_value(std::uint8_t code, VectorScaleElement element) {
  if (element == VectorScaleElement::int8) return static_cast<float>(static_cast<std::int8_t>(code));
  return fp8_to_float(code, Fp8Format::e4m3fn);
}

}  // namespace

std::string VectorScaleQuantizer::spec() const {
  return element_ == VectorScaleElement::int8 ? "int8" : "fp8_e4m3:scale=vector";
}

EncodedTensor VectorScaleQuantizer::encode(std::int64_t tokens, int dim, const float* x,
                                           const QuantContext& context) const {
  require_finite(tokens, dim, x, context);
  const std::size_t row_bytes = 4 + static_cast<std::size_t>(dim);
  EncodedTensor encoded{tokens, dim, std::vector<std::uint8_t>(static_cast<std::size_t>(tokens) * row_bytes)};
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* row = x + t * dim;
    std::uint8_t* out = encoded.bytes.data() + t * row_bytes;
    float amax = 0.0f;
    for (int c = 0; c < dim; ++c) amax = std::max(amax, std::fabs(row[c]));
    const float scale = std::max(amax / code_max(element_), kMinScale);
    std::memcpy(out, &scale, 4);
    const float inverse = 1.0f / scale;
    for (int c = 0; c < dim; ++c) out[4 + c] = encode_value(row[c] * inverse, element_);
  }
  return encoded;
}

void VectorScaleQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  const std::size_t row_bytes = 4 + static_cast<std::size_t>(encoded.dim);
  require_encoded_size(encoded, static_cast<std::size_t>(encoded.tokens) * row_bytes, spec());
  for (std::int64_t t = 0; t < encoded.tokens; ++t) {
    const std::uint8_t* in = encoded.bytes.data() + t * row_bytes;
    float scale;
    std::memcpy(&scale, in, 4);
    for (int c = 0; c < encoded.dim; ++c) out[t * encoded.dim + c] = decode_value(in[4 + c], element_) * scale;
  }
  require_finite_decoded(spec(), context, encoded.tokens, encoded.dim, out);
}

std::vector<MethodInfo> vector_scale_methods() {
  return {{"int8", "vLLM int8_per_token_head: int8 codes (truncated) with one fp32 scale amax/127 per token and "
           "head", {}, "8 + 32/dim", {"int8"},
           [](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
             reader.finish({});
             return std::make_unique<VectorScaleQuantizer>(VectorScaleElement::int8);
           }}};
}

}  // namespace tqlab
