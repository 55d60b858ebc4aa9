// Helpers for tests: in-memory tensor files built from float values.
#pragma once

#include <cstdint>
#include <cstring>
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

/// Adds a tensor of any dtype holding `bytes` (stored order; C order unless `strides` given).
inline void add_raw_tensor(TensorFile& file, const std::string& name, DType dtype, std::vector<std::int64_t> shape,
                           std::vector<std::byte> bytes, bool big_endian = false,
                           std::vector<std::int64_t> strides = {}) {
  TensorView view;
  view.name = name;
  view.dtype = dtype;
  view.big_endian = big_endian;
  view.strides = strides.empty() ? c_order_strides(shape) : strides;
  view.shape = std::move(shape);
  view.byte_size = bytes.size();
  view.data = bytes.empty() ? nullptr : file.adopt_buffer(std::move(bytes));
  file.add_tensor(std::move(view));
}

/// The little-endian bytes of `values` (any trivially copyable element type).
template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// Values 0, 1, 2, ... for a tensor of `count` elements.
inline std::vector<float> iota_values(std::int64_t count, float start = 0.0f) {
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = start + static_cast<float>(i);
  return values;
}

}  // namespace tqlab::testing
