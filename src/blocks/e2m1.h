// FP4 E2M1, the element type of MXFP4 and NVFP4: sign, 2 exponent bits (bias 1), 1 mantissa bit;
// no Inf or NaN. Codes 0..7 are +{0, 0.5, 1, 1.5, 2, 3, 4, 6}, codes 8..15 the same with the sign
// set (8 is -0).
//
// Source: OCP Microscaling Formats (MX) Specification v1.0 (2023), section 5.3.3 (FP4 E2M1);
// ggml's kvalues_fp4 (ggml-common.h) holds the same values doubled, {0, 1, 2, 3, 4, 6, 8, 12, ...},
// and ggml decodes code 8 as +0.
#pragma once

#include <cstdint>

namespace tqlab {

/// The value of a 4-bit E2M1 code (only the low 4 bits are read).
float e2m1_value(std::uint8_t code);

/// The E2M1 code nearest to `value`: round to nearest, ties to even (the code with mantissa bit 0),
/// saturating at +-6; the sign of zero is kept (-0.1 gives code 8). `value` must not be NaN.
std::uint8_t e2m1_nearest(float value);

}  // namespace tqlab
