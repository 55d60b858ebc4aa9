// Element types of stored tensors and their conversion to and from float.
//
// Conversions are bit-exact and portable: float -> fp16/bf16 rounds to
// nearest, ties to even; NaN stays NaN, overflow becomes +-Inf (as IEEE 754
// and numpy's astype do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tqlab {

enum class DType {
  f16,   ///< IEEE 754 binary16
  bf16,  ///< bfloat16 (upper half of a binary32)
  f32,   ///< IEEE 754 binary32
  f64,   ///< IEEE 754 binary64
  raw16, ///< 2-byte values of unknown meaning (npy '<u2', '|V2'); read as bf16 on request
};

/// Size of one element in bytes.
std::size_t dtype_size(DType dtype);

/// Short name: "f16", "bf16", "f32", "f64", "raw16".
std::string_view dtype_name(DType dtype);

/// Parses "f16|fp16|float16", "bf16|bfloat16", "f32|fp32|float32", "f64|fp64|float64".
std::optional<DType> parse_dtype(std::string_view name);

/// True for types whose values convert to float without a reinterpretation choice.
bool dtype_is_float(DType dtype);

/// Writes `value` as one little-endian element of `dtype` at `out`
/// (dtype_size(dtype) bytes; raw16 is written as bf16) and returns what the
/// element holds, i.e. the value load_element will read back.
float store_element(float value, DType dtype, void* out);

/// Reads one little-endian element of `dtype` at `in` (raw16 read as bf16).
float load_element(const void* in, DType dtype);

float half_to_float(std::uint16_t bits);
std::uint16_t float_to_half(float value);
float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float value);

}  // namespace tqlab
