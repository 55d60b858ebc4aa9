// The element-wise pieces of a decoder layer, as transformers computes them.
//
//   rms_norm:      y = w * (x * 1/sqrt(mean(x^2) + eps)), per row of `width`
//                  values (LlamaRMSNorm; the mean in double here);
//   silu_multiply: gate = silu(gate) * up, silu(g) = g / (1 + e^-g) (SwiGLU);
//   add:           x += y.
#pragma once

#include <cstdint>

#include "model/workers.h"

namespace tqlab {

/// Normalizes `rows` rows of `width` floats (row stride `stride`) of x into y
/// (same shape and stride; may alias x), scaled by weight (width floats).
void rms_norm(int rows, int width, std::int64_t stride, const float* x, const float* weight, double eps, float* y);

/// gate[i] = silu(gate[i]) * up[i] for i < count (silu in double, then rounded).
void silu_multiply(std::int64_t count, float* gate, const float* up, Workers& workers);

/// x[i] += y[i] for i < count.
void add_in_place(std::int64_t count, float* x, const float* y);

}  // namespace tqlab
