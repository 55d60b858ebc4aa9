// What the tensor-file targets do with a file the reader accepted: read every
// tensor the way tqlab does (as floats or integers, and as raw bytes), so a
// view pointing outside its bytes or with a wrong size is a sanitizer report.
#pragma once

#include <vector>

#include "core/dtype.h"
#include "io/tensor_file.h"

namespace tqlab::fuzz {

/// Reads every element of every tensor of `file`; the name list and lookups too.
inline void touch_every_tensor(const TensorFile& file) {
  (void)file.name_list();
  for (const TensorView& tensor : file.tensors()) {
    if (file.find(tensor.name) != &tensor) {
      // Duplicate names are refused by every reader: the first match must be this one.
      throw InternalError("tensor file lists a name twice");
    }
    (void)tensor.shape_string();
    const std::vector<std::byte> bytes = read_all_bytes(tensor);
    if (bytes.size() != tensor.byte_size) throw InternalError("byte_size does not match shape and dtype");
    const DTypeKind kind = dtype_info(tensor.dtype).kind;
    const std::int64_t count = tensor.element_count();
    if (tensor.dtype != DType::raw16) {
      std::vector<float> floats(static_cast<std::size_t>(count));
      read_all_floats(tensor, floats.data());
    }
    if (kind == DTypeKind::signed_integer && count > 0) (void)load_signed(tensor, 0);
    if ((kind == DTypeKind::unsigned_integer || kind == DTypeKind::boolean) && count > 0) {
      (void)load_unsigned(tensor, 0);
    }
    file.release(tensor);
  }
}

}  // namespace tqlab::fuzz
