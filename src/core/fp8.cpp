// Float <-> OCP FP8 conversions (see fp8.h for the formats).
//
// Both formats share one encoder. In fp8's normal range the code is the
// float's bit pattern with the mantissa rounded to M bits and the exponent
// rebiased; since codes are ordered like their values, a mantissa that rounds
// up into the next binade carries into the exponent by integer addition. In
// the subnormal range the quantum is fixed, 2^(emin - M), and the code is the
// rounded count of quanta.
#include "core/fp8.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <limits>

#include "core/name_table.h"

namespace tqlab {
namespace {

struct Fp8Layout {
  int mantissa_bits;
  int exponent_bias;
  std::uint8_t max_finite_code;  ///< magnitude bits of the largest finite value
  bool has_infinity;             ///< e5m2: exponent field all ones is Inf/NaN
  float max_value;               ///< the value of max_finite_code
};

constexpr Fp8Layout layout_of(Fp8Format format) {
  return format == Fp8Format::e4m3fn ? Fp8Layout{3, 7, 0x7E, false, 448.0f}
                                      : Fp8Layout{2, 15, 0x7B, true, 57344.0f};
}

// Rounds a non-negative value with few integer bits to the nearest integer,
// ties to even, without depending on the floating-point environment.
float round_half_even(float scaled) {
  const float whole = std::floor(scaled);
  const float fraction = scaled - whole;  // exact: scaled < 2^5
  if (fraction > 0.5f) return whole + 1.0f;
  if (fraction < 0.5f) return whole;
  return (static_cast<int>(whole) & 1) == 0 ? whole : whole + 1.0f;
}

}  // namespace

const char* fp8_format_name(Fp8Format format) {
  constexpr auto kNames =
      make_name_table<Fp8Format>({{Fp8Format::e4m3fn, "fp8_e4m3"}, {Fp8Format::e5m2, "fp8_e5m2"}});
  return kNames.name(format).data();
}

float fp8_max(Fp8Format format) { return layout_of(format).max_value; }

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
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  const std::uint32_t magnitude_bits = bits & 0x7FFFFFFFu;
  if (magnitude_bits > 0x7F800000u) return static_cast<std::uint8_t>(sign | 0x7F);  // NaN in both formats
  const float magnitude = std::bit_cast<float>(magnitude_bits);
  if (magnitude >= fp8_max(format)) return static_cast<std::uint8_t>(sign | layout.max_finite_code);
  const int min_exponent = 1 - layout.exponent_bias;
  int code;
  if (magnitude_bits >= static_cast<std::uint32_t>(127 + min_exponent) << 23) {
    // Normal in fp8: drop the low float mantissa bits, rounding the bit
    // pattern itself half to even; a carry out of the mantissa moves into
    // the exponent, which is the right next value. Then rebias 127 -> bias.
    const int dropped = 23 - layout.mantissa_bits;
    const std::uint32_t rounded =
        magnitude_bits + ((1u << (dropped - 1)) - 1) + ((magnitude_bits >> dropped) & 1u);
    code = static_cast<int>(rounded >> dropped) - ((127 - layout.exponent_bias) << layout.mantissa_bits);
  } else {
    // Subnormal in fp8 (or zero): a count of quanta 2^(min_exponent - M);
    // scaling by that power of two is exact, and the count is below 2^M
    // (rounding up to 2^M gives the smallest normal's code, as it should).
    const float quantum_inverse =
        std::bit_cast<float>(static_cast<std::uint32_t>(127 + layout.mantissa_bits - min_exponent) << 23);
    code = static_cast<int>(round_half_even(magnitude * quantum_inverse));
  }
  // Below max nothing rounds past the largest finite code.
  assert(code >= 0 && code <= layout.max_finite_code);
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
