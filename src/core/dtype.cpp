#include "core/dtype.h"

#include <bit>
#include <cassert>
#include <cstring>

namespace tqlab {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f16:
    case DType::bf16:
    case DType::raw16: return 2;
    case DType::f32: return 4;
    case DType::f64: return 8;
  }
  assert(false && "unknown dtype");
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::raw16: return "raw16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f16" || name == "fp16" || name == "float16") return DType::f16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "f32" || name == "fp32" || name == "float32") return DType::f32;
  if (name == "f64" || name == "fp64" || name == "float64") return DType::f64;
  return std::nullopt;
}

bool dtype_is_float(DType dtype) { return dtype != DType::raw16; }

float store_element(float value, DType dtype, void* out) {
  switch (dtype) {
    case DType::f16: {
      const std::uint16_t bits = float_to_half(value);
      std::memcpy(out, &bits, 2);
      return half_to_float(bits);
    }
    case DType::bf16:
    case DType::raw16: {
      const std::uint16_t bits = float_to_bf16(value);
      std::memcpy(out, &bits, 2);
      return bf16_to_float(bits);
    }
    case DType::f32: std::memcpy(out, &value, 4); return value;
    case DType::f64: {
      const double wide = value;
      std::memcpy(out, &wide, 8);
      return value;
    }
  }
  assert(false && "unknown dtype");
  return value;
}

float load_element(const void* in, DType dtype) {
  switch (dtype) {
    case DType::f16:
    case DType::bf16:
    case DType::raw16: {
      std::uint16_t bits;
      std::memcpy(&bits, in, 2);
      return dtype == DType::f16 ? half_to_float(bits) : bf16_to_float(bits);
    }
    case DType::f32: {
      float value;
      std::memcpy(&value, in, 4);
      return value;
    }
    case DType::f64: {
      double value;
      std::memcpy(&value, in, 8);
      return static_cast<float>(value);
    }
  }
  assert(false && "unknown dtype");
  return 0.0f;
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = bits & 0x3FFu;
  std::uint32_t out;
  if (exponent == 0x1F) {  // Inf or NaN: keep the payload
    out = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal
    out = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // signed zero
    out = sign;
  } else {  // subnormal: renormalize
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3FFu;
    out = sign | (static_cast<std::uint32_t>(127 - 15 + 1 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(out);
}

std::uint16_t float_to_half(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits >= 0x7F800000u) {  // Inf or NaN (NaN keeps a quiet bit)
    const bool is_nan = abs_bits > 0x7F800000u;
    return static_cast<std::uint16_t>(sign | 0x7C00u | (is_nan ? 0x200u | ((abs_bits >> 13) & 0x3FFu) : 0u));
  }
  if (abs_bits >= 0x477FF000u) {  // rounds to >= 65520: overflow to Inf
    return static_cast<std::uint16_t>(sign | 0x7C00u);
  }
  if (abs_bits < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (abs_bits < 0x33000000u) return sign;  // < 2^-25 rounds to zero
    const std::uint32_t exponent = abs_bits >> 23;
    const std::uint32_t mantissa = (abs_bits & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // 14..24
    std::uint32_t half_mantissa = mantissa >> shift;
    const std::uint32_t remainder = mantissa & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return static_cast<std::uint16_t>(sign | half_mantissa);
  }
  // Normal: rebias the exponent, round the mantissa to 10 bits (ties to even).
  std::uint32_t rebased = abs_bits - ((127u - 15u) << 23);
  const std::uint32_t remainder = rebased & 0x1FFFu;
  rebased >>= 13;
  if (remainder > 0x1000u || (remainder == 0x1000u && (rebased & 1u))) ++rebased;
  return static_cast<std::uint16_t>(sign | rebased);
}

float bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_bf16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: keep it quiet
    return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  }
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

}  // namespace tqlab
