// The scalar numerics GGML's reference quantizers rely on, written once for every block format.
#pragma once

#include <cstdint>

namespace tqlab {

/// 1/d, or 0 when d == 0: what every ggml reference quantizer multiplies by (`d ? 1.0f/d : 0.0f`).
/// A d below 2^-126 in magnitude gives +-Inf, as in ggml.
float ggml_reciprocal(float d);

/// The int32 that C's conversion of `value` gives on ggml's x86-64 builds (cvttss2si): truncation
/// toward zero when |value| < 2^31, and INT32_MIN (the "integer indefinite" value) for NaN, +-Inf and
/// anything out of range, where C leaves the conversion undefined. ggml then keeps the low byte
/// (its codes are int8_t / uint8_t), so those cases become code 0.
std::int32_t ggml_truncate_to_int(float value);

/// roundf's result converted as above: ggml's q8_0 codes (`qs[j] = roundf(x0)` into an int8_t).
std::int32_t ggml_round_to_int(float value);

}  // namespace tqlab
