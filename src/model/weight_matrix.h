// Stored weights as float32, without converting a whole model.
//
// A matrix stays in the memory-mapped file. rows_as_float gives a block of
// its rows as float32: a pointer straight into the mapping for aligned F32
// data (nothing copied), otherwise the block decoded into a buffer the caller
// reuses: F16 and BF16 converted, the ggml block types of a GGUF dequantized
// row by row (blocks/ggml_type.h, dequantize_ggml_row). The forward pass
// decodes one block of kLinearBlockRows rows at a time, just before the matrix
// multiply that consumes it, so a BF16 checkpoint or a Q4_K GGUF never exists
// as float32 in memory: decoding costs one pass over the block's elements
// against 2 * tokens flops per element of the multiply.
//
// Q and K of a llama GGUF are stored with each head's rows in ggml's RoPE
// order (model/architecture.h): row 2i + j of a head holds transformers' row
// j * head_dim/2 + i (j = 0, 1; i < head_dim/2). rows_as_float undoes that,
// so the forward, its RoPE and the KV cache see transformers' channel order
// whatever the file: the same floats as the safetensors checkpoint.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "model/weight_source.h"

namespace tqlab {

enum class GgmlType : std::uint32_t;

struct WeightMatrix {
  const std::byte* data = nullptr;  ///< [rows, cols], rows back to back, row_bytes each
  std::uint32_t type_id = 0;        ///< ggml type id of the elements
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::uint64_t row_bytes = 0;
  int interleaved_head_dim = 0;  ///< > 0: rows in ggml's RoPE order per head of this dim (undone on read)

  /// Rows [first, first + count) as float32, count x cols floats: into the
  /// mapping for aligned F32 in transformers' order, else decoded into `buffer` (resized as needed).
  const float* rows_as_float(std::int64_t first, std::int64_t count, std::vector<float>& buffer) const;
  /// The stored row that holds row `row` in transformers' order.
  std::int64_t stored_row(std::int64_t row) const;
};

/// A WeightMatrix over a validated 2-D weight.
WeightMatrix weight_matrix(const StoredWeight& weight);

/// A whole 1-D weight (norm weights, biases, rope factors) as float32, in transformers' order.
std::vector<float> weight_vector(const StoredWeight& weight);

/// The ggml type id of a safetensors weight dtype (F32, F16, BF16); InternalError for another.
GgmlType ggml_type_of(DType dtype);

/// out[i] = float(in[i]) for `count` values of ggml type `type_id` at `in` (count a multiple of its block).
void decode_weights(const std::byte* in, std::uint32_t type_id, std::int64_t count, float* out);

}  // namespace tqlab
