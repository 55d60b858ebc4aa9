#include "io/tensor_file.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include <fmt/ranges.h>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/text.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/safetensors.h"

namespace tqlab {

std::int64_t TensorView::element_count() const {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

std::string TensorView::shape_string() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::vector<std::int64_t> c_order_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t axis = shape.size(); axis-- > 1;) strides[axis - 1] = strides[axis] * shape[axis];
  return strides;
}

bool TensorView::is_c_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t axis = shape.size(); axis-- > 0;) {
    if (shape[axis] != 1 && strides[axis] != expected) return false;
    expected *= shape[axis];
  }
  return true;
}

TensorFile::TensorFile(std::string path, std::string format)
    : path_(std::move(path)), format_(std::move(format)) {}

TensorFile::~TensorFile() = default;

namespace {

// Says why a file's first bytes match no format. The format is recognized from the
// bytes, not the name; but the name says which format the user meant, so the message
// compares the bytes with what that format starts with.
std::string unrecognized_start(std::string_view path, std::span<const std::byte> bytes) {
  auto hex = [&](std::size_t count) {
    std::string out;
    for (std::size_t i = 0; i < std::min(count, bytes.size()); ++i) {
      out += fmt::format("{}{:02x}", i == 0 ? "" : " ", std::to_integer<unsigned>(bytes[i]));
    }
    return out;
  };
  if (path.ends_with(".npy")) return "a .npy file starts with the magic bytes \\x93NUMPY, this one with " + hex(6);
  if (path.ends_with(".npz")) return "an .npz file starts with a zip signature (50 4b 03 04), this one with " + hex(4);
  if (path.ends_with(".safetensors")) {
    if (bytes.size() < 9) {
      return fmt::format("{} bytes are too few for a safetensors file (an 8-byte header length, then a JSON object)",
                         bytes.size());
    }
    const unsigned found = std::to_integer<unsigned>(bytes[8]);
    const std::string shown = found >= 0x20 && found < 0x7f
                                  ? fmt::format("'{}' ({:02x})", static_cast<char>(found), found)
                                  : fmt::format("{:02x}", found);
    return fmt::format("a safetensors header is a JSON object, '{{' at byte 8, but byte 8 is {}", shown);
  }
  return "unrecognized first bytes " + hex(9);
}

}  // namespace

std::unique_ptr<TensorFile> TensorFile::open(const std::string& path, const OpenOptions& options) {
  return open(std::make_shared<const MappedFile>(path), options);
}

std::unique_ptr<TensorFile> TensorFile::open(std::shared_ptr<const MappedFile> mapping, const OpenOptions& options) {
  const std::string& path = mapping->path();
  const auto bytes = mapping->bytes();
  auto starts_with = [&](std::string_view magic) {
    return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
  };
  if (starts_with("\x93NUMPY")) return open_npy(std::move(mapping), options);
  if (starts_with("PK\x03\x04") || starts_with("PK\x05\x06")) return open_npz(std::move(mapping), options);
  if (bytes.size() >= 9 && static_cast<char>(bytes[8]) == '{') return open_safetensors(std::move(mapping));
  if (bytes.empty()) fail("'{}' is empty, expected a .npy, .npz or .safetensors file", path);
  fail("'{}' is not a .npy, .npz or .safetensors file: {}", path, unrecognized_start(path, bytes));
}

const TensorView* TensorFile::find(std::string_view name) const {
  const auto found = index_.find(std::string(name));
  return found == index_.end() ? nullptr : &tensors_[found->second];
}

const TensorView& TensorFile::get(std::string_view name) const {
  if (const TensorView* tensor = find(name)) return *tensor;
  fail("'{}': no tensor named '{}' (it has: {})", path_, printable(name), name_list());
}

std::string TensorFile::name_list() const {
  // The names come from the file: escaped, each cut short, and only as many as fit a line.
  constexpr std::size_t kListedBytes = 200;
  constexpr std::size_t kNameBytes = 48;
  if (tensors_.empty()) return "no tensors";
  std::string listed;
  std::size_t shown = 0;
  for (const TensorView& tensor : tensors_) {
    const std::string entry = printable(tensor.name, kNameBytes);
    if (shown > 0 && listed.size() + entry.size() > kListedBytes) break;
    listed += (shown > 0 ? ", " : "") + entry;
    ++shown;
  }
  if (shown < tensors_.size()) listed += fmt::format(", ... ({} more)", tensors_.size() - shown);
  return listed;
}

bool TensorFile::in_mapping(const TensorView& tensor) const {
  if (!mapping_) return false;
  const auto mapped = mapping_->bytes();
  const std::less<const std::byte*> before;
  return !before(tensor.data, mapped.data()) && before(tensor.data, mapped.data() + mapped.size());
}

void TensorFile::release(const TensorView& tensor) const { release(tensor, 0, tensor.byte_size); }

void TensorFile::release(const TensorView& tensor, std::uint64_t byte_offset, std::uint64_t byte_count) const {
  // Inflated .npz members live in adopted buffers, not in the mapping: nothing to give back.
  if (tensor.byte_size == 0 || byte_offset >= tensor.byte_size || !in_mapping(tensor)) return;
  mapping_->release(tensor.file_offset + byte_offset, std::min(byte_count, tensor.byte_size - byte_offset));
}

void TensorFile::read_bytes(const TensorView& tensor, std::uint64_t byte_offset, std::span<std::byte> out) const {
  if (byte_offset > tensor.byte_size || out.size() > tensor.byte_size - byte_offset) {
    throw InternalError(fmt::format("'{}': bytes [{}, {}) of tensor '{}' lie outside its {} bytes", path_, byte_offset,
                                    byte_offset + out.size(), printable(tensor.name), tensor.byte_size));
  }
  if (out.empty()) return;
  if (in_mapping(tensor)) return mapping_->read(tensor.file_offset + byte_offset, out);
  std::memcpy(out.data(), tensor.data + byte_offset, out.size());  // inflated data, held in memory
}

void TensorFile::set_mapping(std::shared_ptr<const MappedFile> mapping) { mapping_ = std::move(mapping); }

const std::byte* TensorFile::adopt_buffer(std::vector<std::byte> buffer) {
  owned_buffers_.push_back(std::make_unique<std::vector<std::byte>>(std::move(buffer)));
  return owned_buffers_.back()->data();
}

void TensorFile::add_tensor(TensorView view) {
  index_.emplace(view.name, tensors_.size());  // readers refuse duplicates; the first would win anyway
  tensors_.push_back(std::move(view));
}

void TensorFile::set_metadata(std::map<std::string, std::string> metadata) { metadata_ = std::move(metadata); }

namespace {

template <typename Raw>
Raw load(const std::byte* at, bool big_endian) {
  Raw value;
  std::memcpy(&value, at, sizeof(Raw));
  if (big_endian) {
    std::byte* raw = reinterpret_cast<std::byte*>(&value);
    std::reverse(raw, raw + sizeof(Raw));
  }
  return value;
}

float load_float(const std::byte* at, DType dtype, bool big_endian) {
  if (!big_endian) return load_element(at, dtype);
  std::byte swapped[8];
  const std::size_t size = dtype_size(dtype);
  std::reverse_copy(at, at + size, swapped);
  return load_element(swapped, dtype);
}

// Calls visit(element_offset) for every element in C order.
template <typename Visit>
void for_each_c_order(const TensorView& tensor, Visit&& visit) {
  const std::size_t rank = tensor.shape.size();
  const std::int64_t total = tensor.element_count();
  if (total == 0) return;
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t offset = 0;
  for (std::int64_t done = 0; done < total; ++done) {
    visit(offset);
    for (std::size_t axis = rank; axis-- > 0;) {
      if (++index[axis] < tensor.shape[axis]) {
        offset += tensor.strides[axis];
        break;
      }
      offset -= tensor.strides[axis] * (tensor.shape[axis] - 1);
      index[axis] = 0;
    }
  }
}

}  // namespace

void read_floats(const TensorView& tensor, std::int64_t base, std::int64_t step, std::int64_t count,
                 float* out) {
  if (tensor.dtype == DType::raw16) {
    fail("tensor '{}' holds raw 2-byte values (npy '|V2'); say how to read them (e.g. --bf16)",
         printable(tensor.name));
  }
  if (count <= 0) return;  // an empty tensor's data (and the caller's buffer) may be null: no memcpy on null
  const std::size_t size = dtype_size(tensor.dtype);
  const std::byte* at = tensor.data + base * static_cast<std::int64_t>(size);
  const std::int64_t byte_step = step * static_cast<std::int64_t>(size);
  if (!tensor.big_endian && step == 1) {
    // The common case, kept tight: contiguous little-endian data.
    switch (tensor.dtype) {
      case DType::f32: std::memcpy(out, at, static_cast<std::size_t>(count) * 4); return;
      case DType::f16:
        for (std::int64_t i = 0; i < count; ++i) out[i] = half_to_float(load<std::uint16_t>(at + 2 * i, false));
        return;
      case DType::bf16:
        for (std::int64_t i = 0; i < count; ++i) out[i] = bf16_to_float(load<std::uint16_t>(at + 2 * i, false));
        return;
      default: break;
    }
  }
  for (std::int64_t i = 0; i < count; ++i) out[i] = load_float(at + i * byte_step, tensor.dtype, tensor.big_endian);
}

void read_all_floats(const TensorView& tensor, float* out) {
  if (tensor.is_c_contiguous()) {
    read_floats(tensor, 0, 1, tensor.element_count(), out);
    return;
  }
  if (tensor.dtype == DType::raw16) read_floats(tensor, 0, 1, 0, out);  // throws the raw16 message
  float* next = out;
  for_each_c_order(tensor, [&](std::int64_t offset) { read_floats(tensor, offset, 1, 1, next++); });
}

std::vector<std::byte> read_all_bytes(const TensorView& tensor) {
  const std::size_t size = dtype_size(tensor.dtype);
  std::vector<std::byte> bytes(static_cast<std::size_t>(tensor.element_count()) * size);
  std::byte* next = bytes.data();
  for_each_c_order(tensor, [&](std::int64_t offset) {
    std::memcpy(next, tensor.data + offset * static_cast<std::int64_t>(size), size);
    if (tensor.big_endian) std::reverse(next, next + size);
    next += size;
  });
  return bytes;
}

namespace {

// An integer or bool element widened to 64 bits: signed types sign-extended, bools 0 or 1.
std::uint64_t widened_element(const TensorView& tensor, std::int64_t offset) {
  const std::byte* at = tensor.data + offset * static_cast<std::int64_t>(dtype_size(tensor.dtype));
  const bool big = tensor.big_endian;
  const auto extend = [](std::int64_t value) { return static_cast<std::uint64_t>(value); };
  switch (tensor.dtype) {
    case DType::boolean: return load<std::uint8_t>(at, false) != 0 ? 1 : 0;
    case DType::u8: return load<std::uint8_t>(at, false);
    case DType::i8: return extend(load<std::int8_t>(at, false));
    case DType::u16: return load<std::uint16_t>(at, big);
    case DType::i16: return extend(load<std::int16_t>(at, big));
    case DType::u32: return load<std::uint32_t>(at, big);
    case DType::i32: return extend(load<std::int32_t>(at, big));
    case DType::u64: return load<std::uint64_t>(at, big);
    case DType::i64: return extend(load<std::int64_t>(at, big));
    default: break;
  }
  throw InternalError(
      fmt::format("tensor '{}' of {} holds no integers", printable(tensor.name), dtype_name(tensor.dtype)));
}

}  // namespace

std::int64_t load_signed(const TensorView& tensor, std::int64_t offset) {
  if (dtype_info(tensor.dtype).kind != DTypeKind::signed_integer) {
    throw InternalError(fmt::format("load_signed: tensor of {}", dtype_name(tensor.dtype)));
  }
  return static_cast<std::int64_t>(widened_element(tensor, offset));
}

std::uint64_t load_unsigned(const TensorView& tensor, std::int64_t offset) {
  const DTypeKind kind = dtype_info(tensor.dtype).kind;
  if (kind != DTypeKind::unsigned_integer && kind != DTypeKind::boolean) {
    throw InternalError(fmt::format("load_unsigned: tensor of {}", dtype_name(tensor.dtype)));
  }
  return widened_element(tensor, offset);
}

void write_tensor_file(const std::string& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata, bool compressed) {
  if (path.ends_with(".safetensors")) {
    write_safetensors(path, tensors, metadata);
  } else if (path.ends_with(".npz")) {
    write_npz(path, tensors, compressed);
  } else if (path.ends_with(".npy")) {
    if (tensors.size() != 1) {
      fail("'{}': a .npy file holds one tensor, not {}; use .npz or .safetensors", path, tensors.size());
    }
    write_npy(path, tensors[0]);
  } else {
    fail("'{}': unknown output format, expected a name ending in .safetensors, .npz or .npy", path);
  }
}

std::vector<std::byte> encode_floats(std::span<const float> values, DType dtype) {
  const std::size_t size = dtype_size(dtype);
  std::vector<std::byte> bytes(values.size() * size);
  for (std::size_t i = 0; i < values.size(); ++i) store_element(values[i], dtype, bytes.data() + i * size);
  return bytes;
}

}  // namespace tqlab
