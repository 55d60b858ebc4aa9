#include "model/weight_matrix.h"

#include <cstring>

#include "core/dtype_arrays.h"
#include "core/error.h"

namespace tqlab {

void convert_weights(const std::byte* in, DType dtype, std::int64_t count, float* out) {
  const auto n = static_cast<std::size_t>(count);
  switch (dtype) {
    case DType::f32: std::memcpy(out, in, n * sizeof(float)); return;
    case DType::f16: load_elements(n, in, DType::f16, 1, out); return;  // F16C where the CPU has it
    case DType::bf16: {
      // bfloat16 is the top half of a float32: a shift, which the compiler vectorizes.
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, in + 2 * i, 2);
        const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
        std::memcpy(out + i, &wide, 4);
      }
      return;
    }
    default: throw InternalError("convert_weights: not a weight dtype");
  }
}

const float* WeightMatrix::rows_as_float(std::int64_t first, std::int64_t count, std::vector<float>& buffer) const {
  const std::int64_t offset = first * cols;
  const std::byte* at = view->data + offset * static_cast<std::int64_t>(dtype_size(view->dtype));
  if (view->dtype == DType::f32 && reinterpret_cast<std::uintptr_t>(at) % alignof(float) == 0) {
    return reinterpret_cast<const float*>(at);
  }
  const auto size = static_cast<std::size_t>(count * cols);
  if (buffer.size() < size) buffer.resize(size);
  convert_weights(at, view->dtype, count * cols, buffer.data());
  return buffer.data();
}

WeightMatrix weight_matrix(const TensorView& view) { return {&view, view.shape.at(0), view.shape.at(1)}; }

std::vector<float> weight_vector(const TensorView& view) {
  std::vector<float> out(static_cast<std::size_t>(view.element_count()));
  convert_weights(view.data, view.dtype, view.element_count(), out.data());
  return out;
}

}  // namespace tqlab
