// Float <-> OCP FP8 conversions (see fp8.h for the formats).
//
// Both formats share one encoder: a value's quantum (the gap between
// neighbouring codes) is 2^(e - mantissa_bits) in binade e, and 2^(emin -
// mantissa_bits) throughout the subnormal range. Dividing by the quantum and
// rounding gives the code's mantissa; since codes are ordered like their
// values, a mantissa that rounds up to the next binade carries into the
// exponent field by plain integer addition.
#include "core/fp8.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace tqlab {
namespace {

struct Fp8Layout {
  int mantissa_bits;
  int exponent_bias;
  std::uint8_t max_finite_code;  ///< magnitude bits of the largest finite value
  bool has_infinity;             ///< e5m2: exponent field all ones is Inf/NaN
};

constexpr Fp8Layout layout_of(Fp8Format format) {
  return format == Fp8Format::e4m3fn ? Fp8Layout{3, 7, 0x7E, false} : Fp8Layout{2, 15, 0x7B, true};
}

// Rounds a non-negative value with few integer bits to the nearest integer,
// ties to even, without depending on the floating-point environment.
float round_half_even(float scaled) {
  const float whole = std::floor(scaled);
  const float fraction = scaled - whole;  // exact: scaled < 2^5
  if (fraction > 0.5f) return whole + 1.0f;
  if (fraction < 0.5f) return whole;
  return std::fmod(whole, 2.0f) == 0.0f ? whole : whole + 1.0f;
}

}  // namespace

const char* fp8_format_name(Fp8Format format) {
  return format == Fp8Format::e4m3fn ? "fp8_e4m3" : "fp8_e5m2";
}

float fp8_max(Fp8Format format) { return fp8_to_float(layout_of(format).max_finite_code, format); }

float fp8_min_normal(Fp8Format format) { return std::ldexp(1.0f, 1 - layout_of(format).exponent_bias); }

float fp8_to_float(std::uint8_t code, Fp8Format format) {
  const Fp8Layout layout = layout_of(format);
  const bool negative = (code & 0x80u) != 0;
  const int magnitude = code & 0x7F;
  const int exponent_field = magnitude >> layout.mantissa_bits;
  const int mantissa = magnitude & ((1 << layout.mantissa_bits) - 1);
  const int all_ones_exponent = 0x7F >> layout.mantissa_bits;
  float value;
  if (layout.has_infinity && exponent_field == all_ones_exponent) {
    value = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (!layout.has_infinity && magnitude == 0x7F) {
    value = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent_field == 0) {  // subnormal: no implicit leading one
    value = std::ldexp(static_cast<float>(mantissa), 1 - layout.exponent_bias - layout.mantissa_bits);
  } else {
    value = std::ldexp(static_cast<float>((1 << layout.mantissa_bits) + mantissa),
                       exponent_field - layout.exponent_bias - layout.mantissa_bits);
  }
  return negative ? -value : value;
}

std::uint8_t float_to_fp8(float value, Fp8Format format) {
  const Fp8Layout layout = layout_of(format);
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isnan(value)) return static_cast<std::uint8_t>(sign | 0x7F);  // NaN in both formats
  const float magnitude = std::fabs(value);
  if (magnitude >= fp8_max(format)) return static_cast<std::uint8_t>(sign | layout.max_finite_code);
  if (magnitude == 0.0f) return sign;
  // Below the smallest normal the quantum stays that of the lowest binade.
  const int min_exponent = 1 - layout.exponent_bias;
  const int exponent = std::max(std::ilogb(magnitude), min_exponent);
  const float mantissa = round_half_even(std::ldexp(magnitude, layout.mantissa_bits - exponent));
  // mantissa is in [2^M, 2^(M+1)] for normals and [0, 2^M] in the subnormal
  // range (exponent field 1 minus the implicit one gives field 0). Below max
  // nothing rounds past the largest finite code.
  const int code = ((exponent + layout.exponent_bias) << layout.mantissa_bits) + static_cast<int>(mantissa) -
                   (1 << layout.mantissa_bits);
  assert(code <= layout.max_finite_code);
  return static_cast<std::uint8_t>(sign | code);
}

std::uint8_t float_to_fp8_reference(float value, Fp8Format format) {
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isnan(value)) return static_cast<std::uint8_t>(sign | 0x7F);
  const double target = std::fabs(static_cast<double>(value));
  int best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int magnitude = 0; magnitude < 0x80; ++magnitude) {
    const float candidate = fp8_to_float(static_cast<std::uint8_t>(magnitude), format);
    if (!std::isfinite(candidate)) continue;
    const double distance = std::fabs(static_cast<double>(candidate) - target);
    const bool tie_to_even = distance == best_distance && (magnitude & 1) == 0;
    if (distance < best_distance || tie_to_even) {
      best = magnitude;
      best_distance = distance;
    }
  }
  return static_cast<std::uint8_t>(sign | best);
}

}  // namespace tqlab
