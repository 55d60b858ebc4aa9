// Element types of stored tensors, one table of facts per type (name, size,
// kind, safetensors code, numpy code), and the conversion of float types to
// and from float.
//
// Every type a safetensors file can hold is here: BOOL, U8, I8, U16, I16, U32,
// I32, U64, I64, F8_E4M3, F8_E5M2, F16, BF16, F32, F64, plus raw16 (2-byte
// values of unknown meaning, npy '|V2', what numpy writes for bfloat16 arrays
// of ml_dtypes/JAX). Only float types hold keys, values and queries; the
// others (token ids, masks, position ids) are listed, summarized and copied.
//
// Float conversions are bit-exact and portable: float -> fp16/bf16 rounds to
// nearest, ties to even; NaN stays NaN, overflow becomes +-Inf (as IEEE 754
// and numpy's astype do). fp8 follows src/core/fp8.h: exact to float,
// rounding to nearest even and saturating at +-max (OCP "satfinite") from float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tqlab {

enum class DType : std::uint8_t {
  boolean,  ///< one byte, 0 false, anything else true
  u8, i8, u16, i16, u32, i32, u64, i64,
  f8_e4m3,  ///< OCP E4M3FN (torch.float8_e4m3fn)
  f8_e5m2,  ///< OCP E5M2 (torch.float8_e5m2)
  f16,      ///< IEEE 754 binary16
  bf16,     ///< bfloat16 (upper half of a binary32)
  f32,      ///< IEEE 754 binary32
  f64,      ///< IEEE 754 binary64
  raw16,    ///< 2-byte values of unknown meaning (npy '|V2'); read as bf16 on request
};

enum class DTypeKind {
  boolean,
  unsigned_integer,
  signed_integer,
  floating,  ///< converts to float without a reinterpretation choice
  raw,       ///< bytes whose meaning the file does not say
};

/// The facts about one element type.
struct DTypeInfo {
  DType dtype;
  std::string_view name;         ///< tqlab's name: "bool", "u8", ..., "f8_e4m3", "bf16", "raw16"
  std::size_t size;              ///< bytes per element
  DTypeKind kind;
  std::string_view safetensors;  ///< code in a safetensors header ("I64"); raw16 is written as "BF16"
  /// numpy type code (no byte order) the npy/npz writer stores the elements as.
  /// numpy has no bfloat16 or fp8: their bits go out as "u2" / "u1".
  std::string_view npy;
  /// True when reading `npy` gives this type back (false for bf16 and fp8, whose
  /// npy codes read as u16 / u8; '<u2' reads as bf16 with OpenOptions::raw16_as_bf16).
  bool npy_reads_back;
};

/// Every type, in DType order.
std::span<const DTypeInfo> all_dtypes();

const DTypeInfo& dtype_info(DType dtype);

/// Size of one element in bytes.
std::size_t dtype_size(DType dtype);

/// Short name: "bool", "u8", "i64", "f8_e4m3", "f16", "bf16", "f32", "f64", "raw16", ...
std::string_view dtype_name(DType dtype);

/// Parses the float names "f16|fp16|float16", "bf16|bfloat16", "f32|fp32|float32",
/// "f64|fp64|float64" (what options that choose a stored float type accept).
std::optional<DType> parse_dtype(std::string_view name);

/// The type a safetensors dtype code ("F16", "I64", "BOOL", ...) names.
std::optional<DType> dtype_from_safetensors(std::string_view code);

/// The safetensors codes of every type, "BOOL, U8, ..., F64", for messages.
std::string safetensors_codes();

/// True for float types (fp8, f16, bf16, f32, f64): values a quantizer can take.
bool dtype_is_float(DType dtype);

/// True for bool and integer types.
bool dtype_is_integer(DType dtype);

/// "f8_e4m3, f8_e5m2, f16, bf16, f32, f64": the float types, for messages.
std::string float_dtype_names();

/// Writes `value` as one little-endian element of float type `dtype` at `out`
/// (dtype_size(dtype) bytes; raw16 is written as bf16) and returns what the
/// element holds, i.e. the value load_element will read back. Integer and bool
/// types are not float types: InternalError.
float store_element(float value, DType dtype, void* out);

/// Reads one little-endian element of `dtype` at `in` as float (raw16 read as
/// bf16; integers and bools converted, rounded to float's 24-bit significand).
float load_element(const void* in, DType dtype);

float half_to_float(std::uint16_t bits);
std::uint16_t float_to_half(float value);
float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float value);

}  // namespace tqlab
