// The QJL sketch's sign certification (quant/qjl.h): which float projections
// S_i . r have the sign of the reference's double dot product. qjl.cpp derives
// the margin (a rounding-error bound, Higham §3.1) and takes the double path
// for the rows this test leaves uncertain. Every form below makes the same
// decision for every row (tests/qjl_test.cpp holds them to the reference).
#pragma once

#include <cstdint>

namespace tqlab {

/// For n vectors of m projections each:
///   signs[v * m + i] = 1 when projections[v * m + i] > 0, else 0;
///   uncertain[v]     = 1 when some row i fails
///                      |projections[v * m + i]| > margins[i] * residual_norms[v] + underflow_margin
///                      (a float product, then a float sum, never fused; a NaN fails), else 0.
/// projections: n x m floats; margins: m; residual_norms: n; signs: n x m bytes; uncertain: n bytes.
/// Runs the instruction-set form core/kernel_set.h chooses, else the reference.
void certify_signs(std::int64_t n, int m, const float* projections, const float* margins,
                   const float* residual_norms, float underflow_margin, std::uint8_t* signs,
                   std::uint8_t* uncertain);

/// The definition: one row at a time.
void certify_signs_reference(std::int64_t n, int m, const float* projections, const float* margins,
                             const float* residual_norms, float underflow_margin, std::uint8_t* signs,
                             std::uint8_t* uncertain);

}  // namespace tqlab
