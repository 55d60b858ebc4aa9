// Stored weights as float32, without converting a whole checkpoint.
//
// A matrix stays in the memory-mapped file. rows_as_float gives a block of
// its rows as float32: a pointer straight into the mapping for aligned F32
// data (nothing copied), otherwise the block converted (F16, BF16, or F32 at
// an odd offset) into a buffer the caller reuses. The forward pass converts
// one block of kLinearBlockRows rows at a time, just before the matrix
// multiply that consumes it, so a BF16 checkpoint never exists as float32 in
// memory: the conversion costs one pass over the block's elements against
// 2 * tokens flops per element of the multiply.
#pragma once

#include <cstdint>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab {

struct WeightMatrix {
  const TensorView* view = nullptr;  ///< [rows, cols], F32, F16 or BF16, C order, little-endian
  std::int64_t rows = 0;
  std::int64_t cols = 0;

  /// Rows [first, first + count) as float32, count x cols floats: into the
  /// mapping for aligned F32, else converted into `buffer` (resized as needed).
  const float* rows_as_float(std::int64_t first, std::int64_t count, std::vector<float>& buffer) const;
};

/// A WeightMatrix over `view` (a validated 2-D weight tensor).
WeightMatrix weight_matrix(const TensorView& view);

/// A whole 1-D tensor (norm weights, biases) as float32.
std::vector<float> weight_vector(const TensorView& view);

/// out[i] = float(in[i]) for `count` elements of a weight dtype (F32, F16, BF16) at `in`.
void convert_weights(const std::byte* in, DType dtype, std::int64_t count, float* out);

}  // namespace tqlab
