// Float-storage baselines (fp32, fp16, bf16, fp8_e4m3, fp8_e5m2); the packed
// layouts are in float_quantizer.h. The fp8 scheme models the scaled fp8 KV
// caches of serving engines with an amax calibration: one scale per (layer,
// head) tensor chosen so that the tensor's largest magnitude lands on the
// format's largest finite value.
#include "quant/float_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/name_table.h"
#include "quant/quantizer_support.h"
#include "quant/registry.h"
#include "quant/vector_scale_quantizer.h"

namespace tqlab {
namespace {

constexpr auto kStoredFloatNames = make_name_table<StoredFloat>(
    {{StoredFloat::fp32, "fp32"}, {StoredFloat::fp16, "fp16"}, {StoredFloat::bf16, "bf16"}});

const char* stored_float_name(StoredFloat type) { return kStoredFloatNames.name(type).data(); }

std::size_t stored_float_bytes(StoredFloat type) { return type == StoredFloat::fp32 ? 4 : 2; }

}  // namespace

std::string FloatQuantizer::spec() const { return stored_float_name(type_); }

EncodedTensor FloatQuantizer::encode(std::int64_t tokens, int dim, const float* x,
                                     const QuantContext& context) const {
  require_finite(tokens, dim, x, context);
  EncodedTensor encoded{tokens, dim, {}};
  const std::int64_t count = tokens * dim;
  const std::size_t element_bytes = stored_float_bytes(type_);
  encoded.bytes.resize(static_cast<std::size_t>(count) * element_bytes);
  std::uint8_t* bytes = encoded.bytes.data();
  if (type_ == StoredFloat::fp32) {
    std::memcpy(bytes, x, encoded.bytes.size());
    return encoded;
  }
  // Inf has all exponent bits set: 0x7C00 in fp16, 0x7F80 in bf16.
  const std::uint16_t infinity_bits = type_ == StoredFloat::fp16 ? 0x7C00u : 0x7F80u;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint16_t stored = type_ == StoredFloat::fp16 ? float_to_half(x[i]) : float_to_bf16(x[i]);
    // A finite value that rounds to Inf would poison every metric downstream;
    // the user should learn that the data does not fit the type.
    if ((stored & 0x7FFFu) == infinity_bits) {
      fail("quantizer '{}': value {} in {} at token {}, channel {} overflows {} (largest finite {})", spec(), x[i],
           tensor_location(context), i / dim, i % dim, spec(),
           type_ == StoredFloat::fp16 ? "65504" : "3.3895314e38");
    }
    std::memcpy(bytes + i * element_bytes, &stored, element_bytes);
  }
  return encoded;
}

void FloatQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  const std::int64_t count = encoded.tokens * encoded.dim;
  const std::size_t element_bytes = stored_float_bytes(type_);
  require_encoded_size(encoded, static_cast<std::size_t>(count) * element_bytes, spec());
  const std::uint8_t* bytes = encoded.bytes.data();
  if (type_ == StoredFloat::fp32) {
    std::memcpy(out, bytes, encoded.bytes.size());
  } else {
    for (std::int64_t i = 0; i < count; ++i) {
      std::uint16_t stored;
      std::memcpy(&stored, bytes + i * element_bytes, element_bytes);
      out[i] = type_ == StoredFloat::fp16 ? half_to_float(stored) : bf16_to_float(stored);
    }
  }
  // encode() refuses NaN, Inf and overflow, so a stored one is corrupt.
  require_finite_decoded(spec(), context, encoded.tokens, encoded.dim, out);
}

std::string Fp8Quantizer::spec() const { return fp8_format_name(format_); }

EncodedTensor Fp8Quantizer::encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const {
  require_finite(tokens, dim, x, context);
  const std::int64_t count = tokens * dim;
  float amax = 0.0f;
  for (std::int64_t i = 0; i < count; ++i) amax = std::max(amax, std::fabs(x[i]));
  float scale = amax / fp8_max(format_);
  // An all-zero tensor (or one so small that the scale underflows) gets scale
  // 1: every value then encodes to a zero code and decodes to zero, no 0/0.
  if (scale == 0.0f) scale = 1.0f;
  // With amax near FLT_MAX, max * scale may round up to Inf: the largest code
  // would then decode to Inf. One ulp less keeps it finite (x / scale then
  // saturates at the largest code, as it should).
  while (!std::isfinite(fp8_max(format_) * scale)) scale = std::nextafter(scale, 0.0f);

  EncodedTensor encoded{tokens, dim, {}};
  encoded.bytes.resize(sizeof(float) + static_cast<std::size_t>(count));
  std::memcpy(encoded.bytes.data(), &scale, sizeof(float));
  std::uint8_t* codes = encoded.bytes.data() + sizeof(float);
  // Division, not multiplication by 1/scale: x / scale is then correctly
  // rounded, so the only error left is fp8's own rounding.
  for (std::int64_t i = 0; i < count; ++i) codes[i] = float_to_fp8(x[i] / scale, format_);
  return encoded;
}

void Fp8Quantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  const std::int64_t count = encoded.tokens * encoded.dim;
  require_encoded_size(encoded, sizeof(float) + static_cast<std::size_t>(count), spec());
  float scale;
  std::memcpy(&scale, encoded.bytes.data(), sizeof(float));
  // encode() writes a positive scale with max * scale <= the tensor's largest |x|.
  if (!(scale > 0.0f) || !std::isfinite(fp8_max(format_) * scale)) {
    fail_corrupt(spec(), context, fmt::format("scale {} is not positive or makes {} * scale overflow", scale,
                                              fp8_max(format_)));
  }
  // The 256 possible products, once: decoding becomes a table lookup.
  float value_of_code[256];
  for (int code = 0; code < 256; ++code) {
    value_of_code[code] = fp8_to_float(static_cast<std::uint8_t>(code), format_) * scale;
  }
  const std::uint8_t* codes = encoded.bytes.data() + sizeof(float);
  for (std::int64_t i = 0; i < count; ++i) out[i] = value_of_code[codes[i]];
  // encode() saturates, so a NaN (or e5m2 Inf) code is corrupt.
  require_finite_decoded(spec(), context, encoded.tokens, encoded.dim, out);
}

std::vector<MethodInfo> float_methods() {
  std::vector<MethodInfo> methods;
  const auto add_float = [&](StoredFloat type, std::string summary, std::string bits) {
    const std::string name = stored_float_name(type);
    methods.push_back({name, std::move(summary), {}, std::move(bits), {name},
                       [type](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
                         reader.finish({});
                         return std::make_unique<FloatQuantizer>(type);
                       }});
  };
  const auto add_fp8 = [&](Fp8Format format, std::string summary) {
    const std::string name = fp8_format_name(format);
    methods.push_back({name, std::move(summary), {}, "8 + 32/(tokens*dim)", {name},
                       [format](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
                         reader.finish({});
                         return std::make_unique<Fp8Quantizer>(format);
                       }});
  };
  // fp8_e4m3 also comes with one scale per stored vector (vLLM's fp8_per_token_head).
  const std::vector<OptionDoc> e4m3_options = {
      {"scale", "tensor|vector",
       "tensor (default): one fp32 scale per (layer, head) tensor; vector: one per token and head, vLLM's "
       "fp8_per_token_head (8 + 32/dim bits)"}};
  const auto add_e4m3 = [&](std::string summary) {
    methods.push_back({"fp8_e4m3", std::move(summary), e4m3_options, "8 + 32/(tokens*dim); scale=vector: 8 + 32/dim",
                       {"fp8_e4m3", "fp8_e4m3:scale=vector"},
                       [e4m3_options](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
                         const std::optional<std::string> scale = reader.choice("scale", {"tensor", "vector"});
                         reader.finish(e4m3_options);
                         if (scale == "vector") {
                           return std::make_unique<VectorScaleQuantizer>(VectorScaleElement::fp8_e4m3);
                         }
                         return std::make_unique<Fp8Quantizer>(Fp8Format::e4m3fn);
                       }});
  };
  add_float(StoredFloat::fp16, "every value stored as IEEE fp16 (the 16-bit reference for compression)", "16");
  add_float(StoredFloat::bf16, "every value stored as bfloat16", "16");
  add_float(StoredFloat::fp32, "every value stored as fp32 (lossless for float input)", "32");
  add_e4m3("OCP FP8 E4M3FN (max 448) with one fp32 scale per (layer, head) tensor, or per vector");
  add_fp8(Fp8Format::e5m2, "OCP FP8 E5M2 (max 57344) with one fp32 scale per (layer, head) tensor");
  return methods;
}

}  // namespace tqlab
