#include "io/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "blocks/ggml_type.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/text.h"

namespace tqlab {
namespace {

constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr std::uint64_t kDefaultAlignment = 32;
constexpr std::size_t kMaxNameBytes = 64;      // GGML_MAX_NAME: names are shorter
constexpr std::uint32_t kMaxDims = 4;          // GGML_MAX_DIMS
// The fewest bytes a record can take, to hold declared counts against the bytes left
// before anything is allocated: a key/value (8-byte key length, u32 type, 1-byte value)
// and a tensor info (8-byte name length, u32 n_dims, u32 type, u64 offset).
constexpr std::uint64_t kMinMetadataBytes = 8 + 4 + 1;
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

// Stored size of a scalar of `type` (0 for string and array, whose size varies).
std::uint64_t scalar_bytes(GgufType type) {
  switch (type) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    case GgufType::string: case GgufType::array: return 0;
  }
  return 0;
}

std::uint32_t byte_swapped(std::uint32_t value) { return __builtin_bswap32(value); }

bool known_type(std::uint32_t raw) { return raw <= static_cast<std::uint32_t>(GgufType::f64); }

template <typename T>
T load(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

}  // namespace

// Reads the header front to back; every read is checked against the bytes left.
class GgufParser {
 public:
  GgufParser(GgufFile& file, std::span<const std::byte> bytes) : file_(file), bytes_(bytes) {}

  void parse() {
    if (bytes_.size() < 4 || load<std::uint32_t>(bytes_.data()) != kMagic) {
      fail("{}: not a GGUF file (the first 4 bytes are not \"GGUF\")", where());
    }
    const auto version = read<std::uint32_t>("version");
    if (version == 1) fail("{}: GGUF version 1 is not supported (versions 2 and 3 are)", where());
    if (version != 2 && version != 3) {
      if (byte_swapped(version) == 2 || byte_swapped(version) == 3) {
        fail("{}: a big-endian GGUF (version {} byte-swapped); tqlab reads little-endian GGUF files", where(),
             byte_swapped(version));
      }
      fail("{}: GGUF version {} is not supported (versions 2 and 3 are)", where(), version);
    }
    file_.version_ = version;
    const auto tensor_count = read<std::uint64_t>("tensor_count");
    const auto kv_count = read<std::uint64_t>("metadata_kv_count");
    check_count(kv_count, kMinMetadataBytes, left(), "metadata_kv_count", "key/value pairs");
    check_count(tensor_count, kMinTensorInfoBytes, left() - kv_count * kMinMetadataBytes, "tensor_count",
                "tensor infos");

    file_.metadata_.reserve(kv_count);
    for (std::uint64_t i = 0; i < kv_count; ++i) read_metadata(i);
    for (std::size_t i = 0; i < file_.metadata_.size(); ++i) {
      const std::string& key = file_.metadata_[i].key;
      if (!file_.key_index_.emplace(key, i).second) fail("{}: metadata key '{}' appears twice", where(), show(key));
    }
    read_alignment();

    file_.tensors_.reserve(tensor_count);
    for (std::uint64_t i = 0; i < tensor_count; ++i) read_tensor_info(i);
    for (std::size_t i = 0; i < file_.tensors_.size(); ++i) {
      const std::string& name = file_.tensors_[i].name;
      if (!file_.tensor_index_.emplace(name, i).second) fail("{}: tensor '{}' appears twice", where(), show(name));
    }
    place_tensors();
  }

 private:
  std::string where() const { return file_.where(); }
  static std::string show(std::string_view text) { return printable(text); }
  std::uint64_t left() const { return bytes_.size() - position_; }

  void need(std::uint64_t count, const std::string& what) const {
    if (count > left()) {
      fail("{}: {} at byte {} needs {} bytes; the file has {} left", where(), what, position_, count, left());
    }
  }

  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    const T value = load<T>(bytes_.data() + position_);
    position_ += sizeof(T);
    return value;
  }

  std::string_view read_string(const std::string& what) {
    const auto length = read<std::uint64_t>(what + "'s length");
    need(length, fmt::format("{} ({} bytes long)", what, length));
    const auto* at = reinterpret_cast<const char*>(bytes_.data() + position_);
    position_ += length;
    return {at, static_cast<std::size_t>(length)};
  }

  // A count of records of at least `min_bytes` each that `available` bytes could not hold.
  void check_count(std::uint64_t count, std::uint64_t min_bytes, std::uint64_t available, const char* field,
                   const char* what) const {
    if (count > available / min_bytes) {
      fail("{}: {} says {} {}, but the {} bytes left could hold at most {}", where(), field, count, what, available,
           available / min_bytes);
    }
  }

  GgufType read_type(const std::string& what) {
    const auto raw = read<std::uint32_t>(what);
    if (!known_type(raw)) fail("{}: {} is {}, not a GGUF value type (0 to 12)", where(), what, raw);
    return static_cast<GgufType>(raw);
  }

  // One value of scalar type `type` (not array) into `value`.
  void read_scalar(GgufType type, GgufValue& value, const std::string& what) {
    if (type == GgufType::string) {
      value.strings.push_back(read_string(what));
      return;
    }
    const std::uint64_t size = scalar_bytes(type);
    need(size, what);
    const std::byte* at = bytes_.data() + position_;
    if (type == GgufType::boolean && std::to_integer<unsigned>(*at) > 1) {
      fail("{}: {} is a bool holding {} (expected 0 or 1)", where(), what, std::to_integer<unsigned>(*at));
    }
    if (value.data == nullptr) value.data = at;
    position_ += size;
  }

  void read_metadata(std::uint64_t index) {
    const std::string_view key = read_string(fmt::format("metadata key {}", index));
    const std::string name = fmt::format("metadata '{}'", show(key));
    GgufValue value;
    value.type = read_type(name + "'s type");
    if (value.type == GgufType::array) {
      value.element_type = read_type(name + "'s element type");
      if (value.element_type == GgufType::array) fail("{}: {} is an array of arrays (not supported)", where(), name);
      value.count = read<std::uint64_t>(name + "'s element count");
      const std::uint64_t element_min = value.element_type == GgufType::string ? 8 : scalar_bytes(value.element_type);
      if (value.count > left() / element_min) {
        fail("{}: {} declares {} {} elements, more than the {} bytes left could hold", where(), name, value.count,
             gguf_type_name(value.element_type), left());
      }
      if (value.element_type == GgufType::string) value.strings.reserve(value.count);
      for (std::uint64_t i = 0; i < value.count; ++i) {
        read_scalar(value.element_type, value, fmt::format("{} element {}", name, i));
      }
    } else {
      read_scalar(value.type, value, name);
    }
    file_.metadata_.push_back({std::string(key), std::move(value)});
  }

  void read_alignment() {
    const GgufValue* value = file_.find("general.alignment");
    if (value == nullptr) return;
    if (value->type != GgufType::u32) {
      fail("{}: metadata 'general.alignment' is {}; expected u32", where(), gguf_type_name(value->type));
    }
    const std::uint64_t alignment = value->as_unsigned();
    if (alignment == 0 || !std::has_single_bit(alignment)) {
      fail("{}: metadata 'general.alignment' is {}; expected a power of two", where(), alignment);
    }
    file_.alignment_ = alignment;
  }

  void read_tensor_info(std::uint64_t index) {
    GgufTensor tensor;
    const std::string_view name = read_string(fmt::format("tensor info {}'s name", index));
    if (name.empty()) fail("{}: tensor info {} has an empty name", where(), index);
    if (name.size() >= kMaxNameBytes) {
      fail("{}: tensor info {}'s name '{}' is {} bytes long; ggml allows at most {}", where(), index, show(name),
           name.size(), kMaxNameBytes - 1);
    }
    tensor.name = std::string(name);
    const std::string what = fmt::format("tensor '{}'", show(name));
    const auto dims = read<std::uint32_t>(what + "'s n_dims");
    if (dims == 0 || dims > kMaxDims) fail("{}: {} has {} dims; expected 1 to {}", where(), what, dims, kMaxDims);
    std::int64_t count = 1;
    for (std::uint32_t d = 0; d < dims; ++d) {
      const auto raw = read<std::uint64_t>(fmt::format("{}'s ne[{}]", what, d));
      if (raw > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        fail("{}: {}'s ne[{}] is {} (negative as int64)", where(), what, d, static_cast<std::int64_t>(raw));
      }
      const auto extent = static_cast<std::int64_t>(raw);
      if (extent != 0 && count > std::numeric_limits<std::int64_t>::max() / extent) {
        fail("{}: {}'s dims multiply past 2^63 elements (ne[{}] = {})", where(), what, d, extent);
      }
      count *= extent;
      tensor.ne.push_back(extent);
    }
    tensor.element_count = count;
    tensor.type_id = read<std::uint32_t>(what + "'s type");
    tensor.traits = ggml_type_traits(tensor.type_id);
    if (tensor.traits == nullptr) fail("{}: {} has type id {}, which is no ggml type", where(), what, tensor.type_id);
    const std::int64_t block = tensor.traits->block_values;
    if (tensor.ne[0] % block != 0) {
      fail("{}: {} is {} with rows of {} values, not a multiple of its block of {}", where(), what,
           tensor.traits->name, tensor.ne[0], block);
    }
    // count / block blocks of block_bytes: at most count bytes per value times block_bytes / block, so
    // this cannot overflow unless a block holds more bytes than values; checked all the same.
    const auto blocks = static_cast<std::uint64_t>(count / block);
    const auto block_bytes = static_cast<std::uint64_t>(tensor.traits->block_bytes);
    if (blocks != 0 && block_bytes > std::numeric_limits<std::uint64_t>::max() / blocks) {
      fail("{}: {}'s size in bytes overflows", where(), what);
    }
    tensor.byte_size = blocks * block_bytes;
    tensor.offset = read<std::uint64_t>(what + "'s offset");
    file_.tensors_.push_back(std::move(tensor));
  }

  // The data section starts at the next multiple of the alignment; tensors follow in
  // order, each at the previous one's end rounded up to the alignment (gguf.cpp).
  void place_tensors() {
    const std::uint64_t alignment = file_.alignment_;
    const std::uint64_t size = bytes_.size();
    const std::uint64_t padded_header = position_ + (alignment - position_ % alignment) % alignment;
    file_.data_offset_ = std::min(padded_header, size);
    if (!file_.tensors_.empty() && padded_header > size) {
      fail("{}: the data section would start at byte {} (the header padded to {}), past the file's {} bytes",
           where(), padded_header, alignment, size);
    }
    std::uint64_t expected = 0;
    for (GgufTensor& tensor : file_.tensors_) {
      const std::string what = fmt::format("tensor '{}'", show(tensor.name));
      if (tensor.offset % alignment != 0) {
        fail("{}: {}'s offset {} is not a multiple of the alignment {}", where(), what, tensor.offset, alignment);
      }
      if (tensor.offset != expected) {
        fail("{}: {}'s offset is {}; expected {} (tensors follow each other in order, each padded to {})", where(),
             what, tensor.offset, expected, alignment);
      }
      const std::uint64_t room = size - padded_header;
      if (tensor.offset > room || tensor.byte_size > room - tensor.offset) {
        fail("{}: {} ({}, shape {}) needs bytes [{}, {}) of the data section, which holds {}", where(), what,
             tensor.traits->name, tensor.shape_string(), tensor.offset, tensor.offset + tensor.byte_size, room);
      }
      tensor.file_offset = padded_header + tensor.offset;
      tensor.data = tensor.byte_size == 0 ? nullptr : bytes_.data() + tensor.file_offset;
      expected = tensor.offset + tensor.byte_size + (alignment - tensor.byte_size % alignment) % alignment;
    }
  }

  GgufFile& file_;
  std::span<const std::byte> bytes_;
  std::uint64_t position_ = 4;
};

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::u8: return "u8";
    case GgufType::i8: return "i8";
    case GgufType::u16: return "u16";
    case GgufType::i16: return "i16";
    case GgufType::u32: return "u32";
    case GgufType::i32: return "i32";
    case GgufType::f32: return "f32";
    case GgufType::boolean: return "bool";
    case GgufType::string: return "string";
    case GgufType::array: return "array";
    case GgufType::u64: return "u64";
    case GgufType::i64: return "i64";
    case GgufType::f64: return "f64";
  }
  return "?";
}

bool GgufValue::is_integer() const {
  switch (scalar_type()) {
    case GgufType::u8: case GgufType::i8: case GgufType::u16: case GgufType::i16:
    case GgufType::u32: case GgufType::i32: case GgufType::u64: case GgufType::i64: return true;
    default: return false;
  }
}

bool GgufValue::is_number() const {
  return is_integer() || scalar_type() == GgufType::f32 || scalar_type() == GgufType::f64;
}

std::int64_t GgufValue::as_signed(std::uint64_t i) const {
  const std::byte* at = data + i * scalar_bytes(scalar_type());
  switch (scalar_type()) {
    case GgufType::i8: return load<std::int8_t>(at);
    case GgufType::i16: return load<std::int16_t>(at);
    case GgufType::i32: return load<std::int32_t>(at);
    case GgufType::i64: return load<std::int64_t>(at);
    default: return static_cast<std::int64_t>(as_unsigned(i));
  }
}

std::uint64_t GgufValue::as_unsigned(std::uint64_t i) const {
  const std::byte* at = data + i * scalar_bytes(scalar_type());
  switch (scalar_type()) {
    case GgufType::u8: case GgufType::boolean: return load<std::uint8_t>(at);
    case GgufType::u16: return load<std::uint16_t>(at);
    case GgufType::u32: return load<std::uint32_t>(at);
    case GgufType::u64: return load<std::uint64_t>(at);
    default: return static_cast<std::uint64_t>(as_signed(i));
  }
}

double GgufValue::as_double(std::uint64_t i) const {
  const std::byte* at = data + i * scalar_bytes(scalar_type());
  switch (scalar_type()) {
    case GgufType::f32: return load<float>(at);
    case GgufType::f64: return load<double>(at);
    case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64:
      return static_cast<double>(as_signed(i));
    default: return static_cast<double>(as_unsigned(i));
  }
}

std::vector<std::int64_t> GgufTensor::shape() const { return {ne.rbegin(), ne.rend()}; }

std::string GgufTensor::shape_string() const { return fmt::format("[{}]", fmt::join(shape(), ", ")); }

std::uint64_t GgufTensor::row_bytes() const {
  return static_cast<std::uint64_t>(ne[0] / traits->block_values * traits->block_bytes);
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  return open(std::make_shared<const MappedFile>(path));
}

std::unique_ptr<GgufFile> GgufFile::open(std::shared_ptr<const MappedFile> mapping) {
  auto file = std::unique_ptr<GgufFile>(new GgufFile());
  file->mapping_ = std::move(mapping);
  GgufParser(*file, file->mapping_->bytes()).parse();
  return file;
}

const std::string& GgufFile::path() const { return mapping_->path(); }
std::uint64_t GgufFile::file_size() const { return mapping_->size(); }
std::string GgufFile::where() const { return fmt::format("GGUF '{}'", path()); }

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto at = key_index_.find(key);
  return at == key_index_.end() ? nullptr : &metadata_[at->second].value;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto at = tensor_index_.find(name);
  return at == tensor_index_.end() ? nullptr : &tensors_[at->second];
}

namespace {

[[noreturn]] void wrong_type(const GgufFile& file, std::string_view key, const GgufValue& value, const char* expected) {
  const std::string found = value.is_array() ? fmt::format("an array of {}", gguf_type_name(value.element_type))
                                             : std::string(gguf_type_name(value.type));
  fail("{}: metadata '{}' is {}; expected {}", file.where(), printable(key), found, expected);
}

}  // namespace

std::optional<std::int64_t> GgufFile::get_integer(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_array() || !value->is_integer()) wrong_type(*this, key, *value, "an integer");
  if (value->type == GgufType::u64 && value->as_unsigned() > std::uint64_t{std::numeric_limits<std::int64_t>::max()}) {
    fail("{}: metadata '{}' is {}, too large", where(), printable(key), value->as_unsigned());
  }
  return value->as_signed();
}

std::optional<double> GgufFile::get_number(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_array() || !value->is_number()) wrong_type(*this, key, *value, "a number");
  return value->as_double();
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->type != GgufType::string) wrong_type(*this, key, *value, "a string");
  return value->strings.front();
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->type != GgufType::boolean) wrong_type(*this, key, *value, "a bool");
  return value->as_unsigned() != 0;
}

const GgufValue* GgufFile::get_array(std::string_view key, GgufType element) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return nullptr;
  if (!value->is_array() || value->element_type != element) {
    wrong_type(*this, key, *value, fmt::format("an array of {}", gguf_type_name(element)).c_str());
  }
  return value;
}

void GgufFile::release(const GgufTensor& tensor) const { mapping_->release(tensor.file_offset, tensor.byte_size); }

bool looks_like_gguf(const std::byte* bytes, std::size_t size) {
  return size >= 4 && load<std::uint32_t>(bytes) == kMagic;
}

namespace {

std::string element_text(const GgufValue& value, std::uint64_t i) {
  switch (value.scalar_type()) {
    case GgufType::string: return fmt::format("\"{}\"", printable(value.strings[i], 60));
    case GgufType::boolean: return value.as_unsigned(i) != 0 ? "true" : "false";
    case GgufType::f32: case GgufType::f64: return fmt::format("{}", value.as_double(i));
    case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64:
      return fmt::format("{}", value.as_signed(i));
    default: return fmt::format("{}", value.as_unsigned(i));
  }
}

}  // namespace

std::string describe_gguf_value(const GgufValue& value, std::size_t shown) {
  if (!value.is_array()) return element_text(value, 0);
  std::string out = "[";
  const std::uint64_t count = std::min<std::uint64_t>(value.count, shown);
  for (std::uint64_t i = 0; i < count; ++i) out += (i ? ", " : "") + element_text(value, i);
  if (value.count > count) out += fmt::format(", ... ({} more)", value.count - count);
  return out + fmt::format("] ({} x {})", gguf_type_name(value.element_type), value.count);
}

}  // namespace tqlab
