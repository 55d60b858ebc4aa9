// Helpers for tests: in-memory tensor files built from float values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab::testing {

/// Adds a C-contiguous f32 tensor holding `values` to `file`.
inline void add_f32_tensor(TensorFile& file, const std::string& name, std::vector<std::int64_t> shape,
                           const std::vector<float>& values) {
  TensorView view;
  view.name = name;
  view.dtype = DType::f32;
  view.shape = shape;
  view.strides = c_order_strides(shape);
  const std::vector<std::byte> bytes = encode_floats(values, DType::f32);
  view.byte_size = bytes.size();
  view.data = file.adopt_buffer(bytes);
  file.add_tensor(std::move(view));
}

/// Values 0, 1, 2, ... for a tensor of `count` elements.
inline std::vector<float> iota_values(std::int64_t count, float start = 0.0f) {
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = start + static_cast<float>(i);
  return values;
}

}  // namespace tqlab::testing
