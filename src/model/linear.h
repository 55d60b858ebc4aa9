// A linear layer over a stored weight matrix: y = x W^T (+ b), as
// torch.nn.Linear computes it, W stored [out, in].
//
// One work item per block of kLinearBlockRows rows of W (output features):
// the block is taken from the mapping as float32 (model/weight_matrix.h:
// converted into the worker's buffer unless it is aligned F32), then one
// sgemm of tokens x block x in. The blocks are the same for any thread count,
// so y is too.
#pragma once

#include <cstdint>

#include "model/weight_matrix.h"
#include "model/workers.h"

namespace tqlab {

/// Output features per work item of linear().
inline constexpr int kLinearBlockRows = 256;

/// y = x W^T + bias. x: tokens x w.cols floats (row stride w.cols); bias:
/// w.rows floats or null; y: tokens rows of w.rows floats at row stride ldy.
void linear(int tokens, const float* x, const WeightMatrix& w, const float* bias, float* y, std::int64_t ldy,
            Workers& workers);

/// The same in plain loops (a double sum per output): the reference linear() is held to.
void linear_reference(int tokens, const float* x, const WeightMatrix& w, const float* bias, float* y,
                      std::int64_t ldy);

}  // namespace tqlab
