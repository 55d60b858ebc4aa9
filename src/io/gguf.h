// GGUF, the file format of llama.cpp and ggml (versions 2 and 3), read from
// a memory map and validated whole before anything uses it.
//
// Byte layout (ggml's docs/gguf.md; reader: ggml/src/gguf.cpp, gguf_init_from_file_impl),
// every number little-endian:
//
//   u32 magic "GGUF"  u32 version (2 or 3)  u64 tensor_count  u64 metadata_kv_count
//   metadata_kv_count x { string key, u32 value_type, value }
//   tensor_count x { string name, u32 n_dims, n_dims x u64 ne, u32 ggml_type, u64 offset }
//   padding to general.alignment (default 32)
//   the data section: tensor i at data_start + offset_i
//
//   string = u64 length + that many bytes (no terminator)
//   value  = u8 | i8 | u16 | i16 | u32 | i32 | f32 | bool (1 byte) | string | u64 | i64 | f64
//          | array: u32 element_type, u64 count, count values of that type (no arrays of arrays)
//
// ne[0] is the length of a row (the innermost, contiguous axis): a weight
// matrix of out x in features is stored with ne = [in, out]. A row of a
// block-quantized type is ne[0] / block_values blocks of block_bytes bytes
// (blocks/ggml_type.h), so ne[0] must be a multiple of the block.
//
// What open_gguf checks, each failure an InputError naming the file and the
// field, key or tensor with what it found (as gguf.cpp checks, and a few more):
// the magic; the version (1 and big-endian files refused with their reason);
// counts that the remaining bytes could not hold; every string's length
// inside the file; every value type known (no nested arrays); a bool 0 or 1;
// no key twice; general.alignment a u32 power of two; tensor names non-empty,
// shorter than 64 bytes (GGML_MAX_NAME) and not repeated; 1 to 4 dims, none
// negative, their product below 2^63; a ggml type id blocks/ggml_type.h knows;
// ne[0] a multiple of the type's block; offsets multiples of the alignment,
// each tensor starting where the previous one's padded bytes end (as gguf.cpp
// requires), and every tensor's bytes inside the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tqlab {

class MappedFile;
struct GgmlTypeTraits;

/// A metadata value's type, numbered as the file stores it (gguf.h's enum gguf_type).
enum class GgufType : std::uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};

/// "u8", "i32", "f32", "bool", "string", "array", ...
const char* gguf_type_name(GgufType type);

/// One metadata value, pointing into the mapping.
struct GgufValue {
  GgufType type = GgufType::u8;
  GgufType element_type = GgufType::u8;   ///< arrays: the elements' type (never array)
  std::uint64_t count = 1;                ///< arrays: elements; otherwise 1
  const std::byte* data = nullptr;        ///< a number or numeric array: its stored bytes
  std::vector<std::string_view> strings;  ///< a string (one) or an array of strings (count)

  bool is_array() const { return type == GgufType::array; }
  /// The scalar's (or a numeric array's element i's) type.
  GgufType scalar_type() const { return is_array() ? element_type : type; }
  /// Element i (0 for a scalar) of an integer or bool type, exactly; a u64 above 2^63 - 1 is
  /// returned as is in `as_unsigned`, and `as_signed` is only for the signed and small types.
  std::int64_t as_signed(std::uint64_t i = 0) const;
  std::uint64_t as_unsigned(std::uint64_t i = 0) const;
  /// Element i of any numeric or bool type, as double.
  double as_double(std::uint64_t i = 0) const;
  bool is_integer() const;  ///< scalar_type() is one of the eight integer types
  bool is_number() const;   ///< integer, f32 or f64
};

struct GgufMetadata {
  std::string key;
  GgufValue value;
};

/// One tensor's record and where its bytes are.
struct GgufTensor {
  std::string name;
  std::uint32_t type_id = 0;
  const GgmlTypeTraits* traits = nullptr;  ///< never null in an opened file
  std::vector<std::int64_t> ne;            ///< ggml order: ne[0] = row length
  std::int64_t element_count = 0;
  std::uint64_t offset = 0;       ///< from the data section's start, as stored
  std::uint64_t file_offset = 0;  ///< from the file's start
  std::uint64_t byte_size = 0;    ///< element_count / block_values * block_bytes
  const std::byte* data = nullptr;

  /// The shape in C order (outermost first): ne reversed, so [out, in] for a matrix.
  std::vector<std::int64_t> shape() const;
  /// "[out, in]"
  std::string shape_string() const;
  /// Bytes of one row (ne[0] values).
  std::uint64_t row_bytes() const;
};

class GgufFile {
 public:
  /// Maps and validates `path`. InputError naming the file and what is wrong.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  /// The same for a file already mapped (or bytes held in memory: core/mapped_file.h).
  static std::unique_ptr<GgufFile> open(std::shared_ptr<const MappedFile> mapping);

  const std::string& path() const;
  std::uint64_t file_size() const;
  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }
  /// In file order.
  const std::vector<GgufMetadata>& metadata() const { return metadata_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  /// The value of `key`, or null.
  const GgufValue* find(std::string_view key) const;
  /// The tensor `name`, or null.
  const GgufTensor* find_tensor(std::string_view name) const;

  // Typed metadata; nullopt when the key is absent. InputError "GGUF 'FILE': metadata KEY is TYPE;
  // expected ..." for a value of another type (arrays included) or out of range.
  std::optional<std::int64_t> get_integer(std::string_view key) const;  ///< any integer type, within int64
  std::optional<double> get_number(std::string_view key) const;         ///< f32, f64 or an integer
  std::optional<std::string_view> get_string(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  /// An array of `element` values; null when absent. InputError when it is not such an array.
  const GgufValue* get_array(std::string_view key, GgufType element) const;

  /// Gives back the resident pages of a tensor's bytes (core/mapped_file.h).
  void release(const GgufTensor& tensor) const;

  /// "GGUF 'PATH'", the prefix of every message about this file.
  std::string where() const;

 private:
  GgufFile() = default;
  std::shared_ptr<const MappedFile> mapping_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<GgufMetadata> metadata_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string_view, std::size_t> key_index_, tensor_index_;

  friend class GgufParser;
};

/// True when `bytes` start with the GGUF magic.
bool looks_like_gguf(const std::byte* bytes, std::size_t size);

/// A value for a table or log: a scalar as its text, a string quoted and cut,
/// an array as "[a, b, c, ... (N more)] (TYPE x COUNT)" showing at most `shown` elements.
std::string describe_gguf_value(const GgufValue& value, std::size_t shown = 8);

}  // namespace tqlab
