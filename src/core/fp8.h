// 8-bit floating point formats (OCP 8-bit Floating Point Specification
// (OFP8), rev. 1.0, 2023) and their exact conversion to and from float.
//
//   E4M3FN: sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities;
//           S.1111.111 is NaN, so the largest finite value is S.1111.110 =
//           1.75 * 2^8 = 448. Smallest normal 2^-6, smallest subnormal 2^-9.
//   E5M2:   sign, 5 exponent bits (bias 15), 2 mantissa bits, IEEE 754-like:
//           S.11111.00 is +-Inf, S.11111.{01,10,11} are NaN. Largest finite
//           S.11110.11 = 1.75 * 2^15 = 57344. Smallest normal 2^-14,
//           smallest subnormal 2^-16.
//
// Encoding rounds to nearest, ties to even, and saturates: every value beyond
// the largest finite one (Inf included) becomes +-max, as the OCP "satfinite"
// conversion and serving engines' fp8 KV caches do. NaN stays NaN, and the
// sign of zero is kept.
#pragma once

#include <cstdint>

namespace tqlab {

enum class Fp8Format : std::uint8_t {
  e4m3fn,  ///< OCP E4M3 (finite-only, "FN")
  e5m2,    ///< OCP E5M2 (IEEE-like)
};

/// "fp8_e4m3" or "fp8_e5m2".
const char* fp8_format_name(Fp8Format format);

/// Largest finite value: 448 (e4m3fn) or 57344 (e5m2).
float fp8_max(Fp8Format format);

/// Smallest positive normal value: 2^-6 (e4m3fn) or 2^-14 (e5m2).
float fp8_min_normal(Fp8Format format);

/// The value of an 8-bit code (NaN codes give a quiet NaN, e5m2 Inf codes +-Inf).
float fp8_to_float(std::uint8_t code, Fp8Format format);

/// The code nearest to `value` (ties to even mantissa), saturated to +-max; NaN -> a NaN code.
std::uint8_t float_to_fp8(float value, Fp8Format format);

/// Reference for float_to_fp8, for tests: searches all 256 codes for the
/// nearest finite value (ties to the code with an even mantissa), in double
/// precision. Slow (256 steps per call).
std::uint8_t float_to_fp8_reference(float value, Fp8Format format);

}  // namespace tqlab
