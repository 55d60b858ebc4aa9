#include "model/weight_matrix.h"

#include <cstring>

#include "blocks/ggml_type.h"
#include "core/dtype_arrays.h"
#include "core/error.h"

namespace tqlab {

GgmlType ggml_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return GgmlType::F32;
    case DType::f16: return GgmlType::F16;
    case DType::bf16: return GgmlType::BF16;
    default: throw InternalError("ggml_type_of: not a weight dtype");
  }
}

void decode_weights(const std::byte* in, std::uint32_t type_id, std::int64_t count, float* out) {
  const auto n = static_cast<std::size_t>(count);
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::F32: std::memcpy(out, in, n * sizeof(float)); return;
    case GgmlType::F16: load_elements(n, in, DType::f16, 1, out); return;  // F16C where the CPU has it
    case GgmlType::BF16: {
      // bfloat16 is the top half of a float32: a shift, which the compiler vectorizes.
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, in + 2 * i, 2);
        const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
        std::memcpy(out + i, &wide, 4);
      }
      return;
    }
    default: dequantize_ggml_row(static_cast<GgmlType>(type_id), in, out, count); return;
  }
}

std::int64_t WeightMatrix::stored_row(std::int64_t row) const {
  if (interleaved_head_dim == 0) return row;
  const std::int64_t dim = interleaved_head_dim, half = dim / 2;
  const std::int64_t head = row / dim, within = row % dim;
  return head * dim + 2 * (within % half) + within / half;
}

const float* WeightMatrix::rows_as_float(std::int64_t first, std::int64_t count, std::vector<float>& buffer) const {
  const std::byte* at = data + static_cast<std::uint64_t>(first) * row_bytes;
  if (interleaved_head_dim == 0 && static_cast<GgmlType>(type_id) == GgmlType::F32 &&
      reinterpret_cast<std::uintptr_t>(at) % alignof(float) == 0) {
    return reinterpret_cast<const float*>(at);
  }
  const auto size = static_cast<std::size_t>(count * cols);
  if (buffer.size() < size) buffer.resize(size);
  if (interleaved_head_dim == 0) {
    // Rows are contiguous: one call decodes the block (ggml rows hold whole blocks).
    decode_weights(at, type_id, count * cols, buffer.data());
    return buffer.data();
  }
  for (std::int64_t r = 0; r < count; ++r) {
    decode_weights(data + static_cast<std::uint64_t>(stored_row(first + r)) * row_bytes, type_id, cols,
                   buffer.data() + r * cols);
  }
  return buffer.data();
}

WeightMatrix weight_matrix(const StoredWeight& weight) {
  return {weight.data, weight.type_id, weight.shape.at(0), weight.shape.at(1), weight.row_bytes,
          weight.interleaved_head_dim};
}

std::vector<float> weight_vector(const StoredWeight& weight) {
  const std::int64_t count = weight.shape.at(0);
  // A vector is one row; as a matrix of `count` one-value rows it takes the same reordering.
  const WeightMatrix rows{weight.data, weight.type_id, count, 1, 0, weight.interleaved_head_dim};
  std::vector<float> out(static_cast<std::size_t>(count));
  if (weight.interleaved_head_dim == 0) {
    decode_weights(weight.data, weight.type_id, count, out.data());
    return out;
  }
  std::vector<float> stored(out.size());
  decode_weights(weight.data, weight.type_id, count, stored.data());
  for (std::int64_t i = 0; i < count; ++i) out[static_cast<std::size_t>(i)] = stored[rows.stored_row(i)];
  return out;
}

}  // namespace tqlab
