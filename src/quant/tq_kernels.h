// The inner loops of the tq quantizer, each with a plain reference routine
// that tests hold it against (tests/tq_kernels_test.cpp).
#pragma once

#include <cstdint>

#include "quant/codebook.h"

namespace tqlab {

/// sqrt(sum x_i^2), accumulated in double so that long vectors do not lose digits. x: n floats.
float vector_norm(int n, const float* x);

/// codes[i] = number of codebook boundaries strictly below y[i] (the nearest
/// level; a value on a boundary takes the upper level). y: n floats, codes: n.
/// Counting compares for b <= 4, a branchless binary search above.
void quantize_to_codes(int n, const float* y, const Codebook& codebook, std::uint8_t* codes);

/// Reference for quantize_to_codes: the level of least |y - c| by a full scan
/// (ties to the upper level).
void quantize_to_codes_reference(int n, const float* y, const Codebook& codebook, std::uint8_t* codes);

}  // namespace tqlab
