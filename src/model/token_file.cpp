#include "model/token_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/text.h"
#include "io/tensor_file.h"

namespace tqlab {
namespace {

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

}  // namespace

TokenFileSpec split_token_spec(const std::string& spec) {
  // FILE.safetensors:NAME, unless a file has that whole name.
  if (const std::size_t colon = spec.rfind(':'); colon != std::string::npos && !exists(spec)) {
    return {spec.substr(0, colon), spec.substr(colon + 1)};
  }
  return {spec, ""};
}

TokenIds read_token_ids(const std::string& spec, int vocab_size, const char* option) {
  TokenIds out;
  const TokenFileSpec split = split_token_spec(spec);
  out.path = split.path;
  out.tensor = split.tensor;
  const auto file = TensorFile::open(out.path);
  const TensorView* view = nullptr;
  if (file->format() == "npy") {
    if (!out.tensor.empty())
      fail("{} '{}': a .npy file holds one array; drop ':{}'", option, out.path, printable(out.tensor));
    view = &file->tensors().front();
    if (view->shape.size() != 1) {
      fail("{} '{}' holds a {} array; token ids must be 1-D (chunks are consecutive slices)", option, out.path,
           view->shape_string());
    }
  } else {
    if (out.tensor.empty()) {
      if (file->tensors().size() != 1) {
        fail("{} '{}' holds {} tensors; name the token ids as FILE:NAME ({})", option, out.path, file->tensors().size(),
             file->name_list());
      }
      view = &file->tensors().front();
      out.tensor = view->name;
    } else {
      view = &file->get(out.tensor);
    }
    if (!view->is_c_contiguous())
      fail("{} '{}': tensor '{}' is not stored in C order", option, out.path, printable(out.tensor));
  }
  const DTypeKind kind = dtype_info(view->dtype).kind;
  out.dtype = std::string(dtype_name(view->dtype));
  const std::string what = out.tensor.empty() ? fmt::format("'{}'", out.path)
                                              : fmt::format("'{}' tensor '{}'", out.path, printable(out.tensor));
  if (kind != DTypeKind::signed_integer && kind != DTypeKind::unsigned_integer) {
    fail("{} {} holds {} values; token ids must be integers (u8, u16, i32, i64, ...)", option, what, out.dtype);
  }
  const std::int64_t count = view->element_count();
  if (count == 0) fail("{} {} holds no token ids", option, what);
  const std::int64_t step = view->shape.size() == 1 ? view->strides[0] : 1;
  out.ids.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t id = kind == DTypeKind::signed_integer ? load_signed(*view, i * step)
                                                              : static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                                    load_unsigned(*view, i * step), INT64_MAX));
    if (id < 0 || id >= vocab_size) {
      fail("{} {}: token {} of {} is {}, outside the model's vocabulary (ids 0..{})", option, what, i, count, id,
           vocab_size - 1);
    }
    out.ids[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(id);
  }
  return out;
}

}  // namespace tqlab
