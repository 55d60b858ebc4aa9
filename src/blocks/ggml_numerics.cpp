// ggml's scalar conversions (ggml_numerics.h). The out-of-range case matters for bytes only: a block
// whose scale is below 2^-126 stores an fp16 scale of 0, so its codes never change a decoded value,
// but the tests compare bytes with libggml-base's.
#include "blocks/ggml_numerics.h"

#include <cmath>
#include <limits>

namespace tqlab {

float ggml_reciprocal(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

std::int32_t ggml_truncate_to_int(float value) {
  // 2^31 is exact in float; every float in (-2^31, 2^31) truncates to an int32.
  constexpr float kLimit = 2147483648.0f;
  if (!(std::fabs(value) < kLimit)) return std::numeric_limits<std::int32_t>::min();
  return static_cast<std::int32_t>(value);
}

std::int32_t ggml_round_to_int(float value) { return ggml_truncate_to_int(std::round(value)); }

}  // namespace tqlab
