#include "core/dtype.h"

#include <bit>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "core/error.h"
#include "core/fp8.h"

namespace tqlab {

namespace {

// One row per DType, in enum order (checked below).
constexpr DTypeInfo kDTypes[] = {
    {DType::boolean, "bool", 1, DTypeKind::boolean, "BOOL", "b1", true},
    {DType::u8, "u8", 1, DTypeKind::unsigned_integer, "U8", "u1", true},
    {DType::i8, "i8", 1, DTypeKind::signed_integer, "I8", "i1", true},
    {DType::u16, "u16", 2, DTypeKind::unsigned_integer, "U16", "u2", true},
    {DType::i16, "i16", 2, DTypeKind::signed_integer, "I16", "i2", true},
    {DType::u32, "u32", 4, DTypeKind::unsigned_integer, "U32", "u4", true},
    {DType::i32, "i32", 4, DTypeKind::signed_integer, "I32", "i4", true},
    {DType::u64, "u64", 8, DTypeKind::unsigned_integer, "U64", "u8", true},
    {DType::i64, "i64", 8, DTypeKind::signed_integer, "I64", "i8", true},
    {DType::f8_e4m3, "f8_e4m3", 1, DTypeKind::floating, "F8_E4M3", "u1", false},
    {DType::f8_e5m2, "f8_e5m2", 1, DTypeKind::floating, "F8_E5M2", "u1", false},
    {DType::f16, "f16", 2, DTypeKind::floating, "F16", "f2", true},
    {DType::bf16, "bf16", 2, DTypeKind::floating, "BF16", "u2", false},
    {DType::f32, "f32", 4, DTypeKind::floating, "F32", "f4", true},
    {DType::f64, "f64", 8, DTypeKind::floating, "F64", "f8", true},
    // No safetensors type means "2 raw bytes"; such dumps hold bfloat16 in practice.
    {DType::raw16, "raw16", 2, DTypeKind::raw, "BF16", "V2", true},
};

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kDTypes); ++i) {
    if (static_cast<std::size_t>(kDTypes[i].dtype) != i) return false;
  }
  return true;
}
static_assert(table_in_enum_order(), "kDTypes rows must follow the DType enum");

template <typename Raw>
Raw load_raw(const void* in) {
  Raw value;
  std::memcpy(&value, in, sizeof(Raw));
  return value;
}

// Names of the types passing `keep`, comma separated, by `field`.
template <typename Keep, typename Field>
std::string join_names(Keep keep, Field field) {
  std::string out;
  for (const DTypeInfo& info : kDTypes) {
    if (!keep(info)) continue;
    if (!out.empty()) out += ", ";
    out += field(info);
  }
  return out;
}

}  // namespace

std::span<const DTypeInfo> all_dtypes() { return kDTypes; }

const DTypeInfo& dtype_info(DType dtype) {
  const auto index = static_cast<std::size_t>(dtype);
  if (index >= std::size(kDTypes)) throw InternalError("dtype_info: unknown dtype");
  return kDTypes[index];
}

std::size_t dtype_size(DType dtype) { return dtype_info(dtype).size; }

std::string_view dtype_name(DType dtype) { return dtype_info(dtype).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f16" || name == "fp16" || name == "float16") return DType::f16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "f32" || name == "fp32" || name == "float32") return DType::f32;
  if (name == "f64" || name == "fp64" || name == "float64") return DType::f64;
  return std::nullopt;
}

std::optional<DType> dtype_from_safetensors(std::string_view code) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.kind != DTypeKind::raw && info.safetensors == code) return info.dtype;
  }
  return std::nullopt;
}

std::string safetensors_codes() {
  return join_names([](const DTypeInfo& info) { return info.kind != DTypeKind::raw; },
                    [](const DTypeInfo& info) { return info.safetensors; });
}

bool dtype_is_float(DType dtype) { return dtype_info(dtype).kind == DTypeKind::floating; }

bool dtype_is_integer(DType dtype) {
  const DTypeKind kind = dtype_info(dtype).kind;
  return kind == DTypeKind::boolean || kind == DTypeKind::unsigned_integer || kind == DTypeKind::signed_integer;
}

std::string float_dtype_names() {
  return join_names([](const DTypeInfo& info) { return info.kind == DTypeKind::floating; },
                    [](const DTypeInfo& info) { return info.name; });
}

float store_element(float value, DType dtype, void* out) {
  switch (dtype) {
    case DType::f8_e4m3:
    case DType::f8_e5m2: {
      const Fp8Format format = dtype == DType::f8_e4m3 ? Fp8Format::e4m3fn : Fp8Format::e5m2;
      const std::uint8_t code = float_to_fp8(value, format);
      std::memcpy(out, &code, 1);
      return fp8_to_float(code, format);
    }
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
    default: break;
  }
  throw InternalError(fmt::format("store_element: {} is not a float type", dtype_name(dtype)));
}

float load_element(const void* in, DType dtype) {
  switch (dtype) {
    case DType::boolean: return load_raw<std::uint8_t>(in) != 0 ? 1.0f : 0.0f;
    case DType::u8: return static_cast<float>(load_raw<std::uint8_t>(in));
    case DType::i8: return static_cast<float>(load_raw<std::int8_t>(in));
    case DType::u16: return static_cast<float>(load_raw<std::uint16_t>(in));
    case DType::i16: return static_cast<float>(load_raw<std::int16_t>(in));
    case DType::u32: return static_cast<float>(load_raw<std::uint32_t>(in));
    case DType::i32: return static_cast<float>(load_raw<std::int32_t>(in));
    case DType::u64: return static_cast<float>(load_raw<std::uint64_t>(in));
    case DType::i64: return static_cast<float>(load_raw<std::int64_t>(in));
    case DType::f8_e4m3: return fp8_to_float(load_raw<std::uint8_t>(in), Fp8Format::e4m3fn);
    case DType::f8_e5m2: return fp8_to_float(load_raw<std::uint8_t>(in), Fp8Format::e5m2);
    case DType::f16: return half_to_float(load_raw<std::uint16_t>(in));
    case DType::bf16:
    case DType::raw16: return bf16_to_float(load_raw<std::uint16_t>(in));
    case DType::f32: return load_raw<float>(in);
    case DType::f64: return static_cast<float>(load_raw<double>(in));
  }
  throw InternalError("load_element: unknown dtype");
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
