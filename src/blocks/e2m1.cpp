// E2M1 (e2m1.h). The rounding thresholds are the midpoints of neighbouring magnitudes; at a midpoint
// the magnitude with an even code (mantissa bit 0) wins, so the comparison is <= toward even codes
// and < toward odd ones.
#include "blocks/e2m1.h"

#include <cmath>

namespace tqlab {
namespace {

constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

}  // namespace

float e2m1_value(std::uint8_t code) {
  const float magnitude = kMagnitudes[code & 7];
  return (code & 8) ? -magnitude : magnitude;
}

std::uint8_t e2m1_nearest(float value) {
  const float a = std::fabs(value);
  std::uint8_t index;
  if (a <= 0.25f) {
    index = 0;
  } else if (a < 0.75f) {
    index = 1;
  } else if (a <= 1.25f) {
    index = 2;
  } else if (a < 1.75f) {
    index = 3;
  } else if (a <= 2.5f) {
    index = 4;
  } else if (a < 3.5f) {
    index = 5;
  } else if (a <= 5.0f) {
    index = 6;
  } else {
    index = 7;  // 5 < a: 6, and everything beyond saturates to 6
  }
  return static_cast<std::uint8_t>(index | (std::signbit(value) ? 8 : 0));
}

}  // namespace tqlab
