// NumPy .npy reader and writer.
//
// Source: the format's definition in numpy/lib/format.py (NEP 1), numpy 1.24.
// Byte layout of a .npy stream:
//   0       6 bytes     magic "\x93NUMPY"
//   6       1 byte      major version: 1, 2 or 3
//   7       1 byte      minor version: 0
//   8       u16 LE (1.0) or u32 LE (2.0, 3.0): header length H
//   10|12   H bytes     header: a Python dict literal, latin-1 (3.0: UTF-8), padded with
//                       spaces and ended by '\n' so that the data starts at a multiple of 64
//   10+H|12+H           data: product(shape) elements of descr, C or Fortran order
#include "io/npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/text.h"

namespace tqlab {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kArrayAlign = 64;       // numpy's ARRAY_ALIGN
constexpr std::size_t kGrowthAxisDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS
constexpr int kMaxLiteralDepth = 32;           // far deeper than any real header nests
constexpr std::string_view kSupportedDtypes =
    "'|b1', '|u1', '|i1', and '<' or '>' with u2 i2 u4 i4 u8 i8 f2 f4 f8, or raw 2-byte '|V2' (bfloat16 bits)";

std::uint16_t load_le16(const std::byte* at) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(at[0]) | std::to_integer<unsigned>(at[1]) << 8);
}

std::uint32_t load_le32(const std::byte* at) {
  return static_cast<std::uint32_t>(load_le16(at)) | static_cast<std::uint32_t>(load_le16(at + 2)) << 16;
}

// ---------------------------------------------------------------------------
// A Python literal, as far as .npy headers use them: the header is evaluated by
// ast.literal_eval in numpy, so we accept what that accepts for these types
// (either quote, True/False/None, trailing commas, any whitespace) and nothing
// that would need evaluation.

struct PyLiteral {
  enum class Kind { string, integer, real, boolean, none, tuple, list, dict };
  Kind kind = Kind::none;
  std::string text;                // string: its value
  std::int64_t integer = 0;        // integer: its value
  bool boolean = false;            // boolean: its value
  std::vector<PyLiteral> items;    // tuple/list: the items; dict: key, value, key, value, ...
  std::string_view source;         // the literal as written, for messages
};

class LiteralParser {
 public:
  LiteralParser(std::string_view text, std::string_view context) : text_(text), context_(context) {}

  // The one literal of the whole text, surrounded by nothing but whitespace.
  PyLiteral parse_all() {
    PyLiteral value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) error("the end of the header after the dict");
    return value;
  }

 private:
  [[noreturn]] void error(std::string_view expected) const {
    if (pos_ >= text_.size()) {
      fail("{}: header is not a valid Python literal: expected {} at header byte {}, found the end",
           context_, expected, pos_);
    }
    const char found = text_[pos_];
    const std::string shown = (found >= 0x20 && found < 0x7f) ? fmt::format("'{}'", found)
                                                                : fmt::format("byte 0x{:02x}", found & 0xff);
    fail("{}: header is not a valid Python literal: expected {} at header byte {}, found {}", context_,
         expected, pos_, shown);
  }

  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }

  bool at(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  PyLiteral parse_value(int depth) {
    if (depth > kMaxLiteralDepth) error(fmt::format("at most {} levels of nesting", kMaxLiteralDepth));
    skip_space();
    if (pos_ >= text_.size()) error("a value");
    const std::size_t start = pos_;
    PyLiteral value;
    const char c = text_[pos_];
    if (c == '\'' || c == '"') {
      value = parse_string();
    } else if (c == '-' || c == '+' || (c >= '0' && c <= '9')) {
      value = parse_integer();
    } else if (c == '(' || c == '[') {
      value = parse_sequence(depth);
    } else if (c == '{') {
      value = parse_dict(depth);
    } else {
      value = parse_name();
    }
    value.source = text_.substr(start, pos_ - start);
    return value;
  }

  PyLiteral parse_string() {
    const char quote = text_[pos_++];
    PyLiteral value;
    value.kind = PyLiteral::Kind::string;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') error(fmt::format("a closing {}", quote));
      const char c = text_[pos_++];
      if (c == quote) break;
      if (c == '\\') {
        // Only the escapes a descr or key could need; others are not worth guessing.
        if (pos_ >= text_.size() || (text_[pos_] != '\\' && text_[pos_] != '\'' && text_[pos_] != '"')) {
          error("one of the escapes \\\\ \\' \\\"");
        }
        value.text.push_back(text_[pos_++]);
        continue;
      }
      value.text.push_back(c);
    }
    return value;
  }

  PyLiteral parse_integer() {
    PyLiteral value;
    value.kind = PyLiteral::Kind::integer;
    bool negative = false;
    if (text_[pos_] == '-' || text_[pos_] == '+') {
      negative = text_[pos_] == '-';
      ++pos_;
      skip_space();  // literal_eval accepts "- 1" too
    }
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') error("a digit");
    const std::size_t digits_start = pos_;
    std::uint64_t magnitude = 0;
    bool overflow = false;
    while (pos_ < text_.size() && ((text_[pos_] >= '0' && text_[pos_] <= '9') || text_[pos_] == '_')) {
      if (text_[pos_] != '_') {
        overflow |= __builtin_mul_overflow(magnitude, 10u, &magnitude);
        overflow |= __builtin_add_overflow(magnitude, static_cast<unsigned>(text_[pos_] - '0'), &magnitude);
      }
      ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      // A float: legal in a literal, never in a valid header; kept so the message can say where.
      skip_real_part();
      value.kind = PyLiteral::Kind::real;
      return value;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;  // Python 2 longs
    const std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (overflow || magnitude > limit) {
      fail("{}: header integer {} does not fit in 64 bits", context_, text_.substr(digits_start, pos_ - digits_start));
    }
    value.integer = negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
    return value;
  }

  void skip_real_part() {
    auto digits = [&] {
      while (pos_ < text_.size() && ((text_[pos_] >= '0' && text_[pos_] <= '9') || text_[pos_] == '_')) ++pos_;
    };
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') error("the exponent's digits");
      digits();
    }
  }

  // "(a, b)" tuple or "[a, b]" list; "(x)" is a parenthesized x, as in Python.
  PyLiteral parse_sequence(int depth) {
    const char open = text_[pos_++];
    const char close = open == '(' ? ')' : ']';
    PyLiteral value;
    value.kind = open == '(' ? PyLiteral::Kind::tuple : PyLiteral::Kind::list;
    bool saw_comma = false;
    while (!at(close)) {
      value.items.push_back(parse_value(depth + 1));
      if (at(',')) {
        ++pos_;
        saw_comma = true;
      } else if (!at(close)) {
        error(fmt::format("',' or '{}'", close));
      }
    }
    ++pos_;
    if (open == '(' && value.items.size() == 1 && !saw_comma) {
      PyLiteral inner = std::move(value.items[0]);
      return inner;
    }
    return value;
  }

  PyLiteral parse_dict(int depth) {
    ++pos_;
    PyLiteral value;
    value.kind = PyLiteral::Kind::dict;
    while (!at('}')) {
      value.items.push_back(parse_value(depth + 1));
      if (!at(':')) error("':'");
      ++pos_;
      value.items.push_back(parse_value(depth + 1));
      if (at(',')) {
        ++pos_;
      } else if (!at('}')) {
        error("',' or '}'");
      }
    }
    ++pos_;
    return value;
  }

  PyLiteral parse_name() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    const std::string_view word = text_.substr(start, pos_ - start);
    PyLiteral value;
    if (word == "True" || word == "False") {
      value.kind = PyLiteral::Kind::boolean;
      value.boolean = word == "True";
    } else if (word == "None") {
      value.kind = PyLiteral::Kind::none;
    } else if (!word.empty()) {
      fail("{}: header is not a valid Python literal: '{:.40}' at header byte {} is not True, False or None",
           context_, word, start);
    } else {
      error("a string, number, True, False, None, tuple, list or dict");
    }
    return value;
  }

  std::string_view text_;
  std::string_view context_;
  std::size_t pos_ = 0;
};

struct DescrType {
  DType dtype;
  bool big_endian;
};

// Maps a numpy type string ("<f4", "|b1", ">i8") to what we store. nullopt: not supported.
std::optional<DescrType> parse_descr(std::string_view descr, const OpenOptions& options) {
  char order = '=';
  if (!descr.empty() && (descr[0] == '<' || descr[0] == '>' || descr[0] == '=' || descr[0] == '|')) {
    order = descr[0];
    descr.remove_prefix(1);
  }
  const DTypeInfo* found = nullptr;
  for (const DTypeInfo& info : all_dtypes()) {
    if (info.npy_reads_back && info.npy == descr) found = &info;
  }
  if (found == nullptr) return std::nullopt;
  DType dtype = found->dtype;
  if (options.raw16_as_bf16 && (dtype == DType::u16 || dtype == DType::raw16)) dtype = DType::bf16;
  // Void holds bytes as the writer's memory held them, and one byte has no order: any mark will do.
  // '|' ("not applicable") is numpy's mark for those; for wider numbers it means nothing.
  if (found->dtype == DType::raw16 || found->size == 1) return DescrType{dtype, false};
  if (order == '|') return std::nullopt;
  const bool native_big = std::endian::native == std::endian::big;
  return DescrType{dtype, order == '>' || (order == '=' && native_big)};
}

std::string describe_shape(std::span<const std::int64_t> shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

}  // namespace

std::uint64_t npy_data_offset(std::span<const std::byte> prefix, std::string_view name, std::string_view where) {
  if (prefix.size() < kMagic.size() || std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) != 0) {
    fail("{}: tensor '{}' is not a .npy stream (expected the magic bytes \\x93NUMPY)", where, printable(name));
  }
  if (prefix.size() < 8) fail("{}: tensor '{}': .npy preamble is truncated", where, printable(name));
  const int major = std::to_integer<int>(prefix[6]);
  const int minor = std::to_integer<int>(prefix[7]);
  if (major < 1 || major > 3 || minor != 0) {
    fail("{}: tensor '{}': unsupported .npy format version {}.{} (expected 1.0, 2.0 or 3.0)", where, printable(name),
         major, minor);
  }
  const std::size_t preamble = major == 1 ? 10 : 12;
  if (prefix.size() < preamble) fail("{}: tensor '{}': .npy preamble is truncated", where, printable(name));
  const std::uint64_t header_length = major == 1 ? load_le16(prefix.data() + 8) : load_le32(prefix.data() + 8);
  return preamble + header_length;
}

NpyHeader parse_npy_header(std::span<const std::byte> prefix, std::string_view name, std::string_view where,
                           const OpenOptions& options) {
  NpyHeader header;
  header.data_offset = npy_data_offset(prefix, name, where);
  header.major_version = std::to_integer<int>(prefix[6]);
  const std::size_t header_start = header.major_version == 1 ? 10 : 12;
  if (header.data_offset > prefix.size()) {
    fail("{}: tensor '{}': .npy header length {} runs past the end ({} bytes follow the {}-byte preamble)", where,
         printable(name), header.data_offset - header_start, prefix.size() - header_start, header_start);
  }
  const std::string_view text(reinterpret_cast<const char*>(prefix.data()) + header_start,
                              header.data_offset - header_start);
  const std::string context = fmt::format("{}: tensor '{}'", where, printable(name));
  const PyLiteral dict = LiteralParser(text, context).parse_all();
  if (dict.kind != PyLiteral::Kind::dict) {
    fail("{}: header is not a dict but {:.60}", context, dict.source);
  }

  const PyLiteral* descr = nullptr;
  const PyLiteral* fortran_order = nullptr;
  const PyLiteral* shape = nullptr;
  std::set<std::string> keys;
  for (std::size_t i = 0; i < dict.items.size(); i += 2) {
    const PyLiteral& key = dict.items[i];
    if (key.kind != PyLiteral::Kind::string) fail("{}: header key {:.40} is not a string", context, key.source);
    if (!keys.insert(key.text).second) fail("{}: header key '{}' appears twice", context, key.text);
    const PyLiteral* value = &dict.items[i + 1];
    if (key.text == "descr") descr = value;
    if (key.text == "fortran_order") fortran_order = value;
    if (key.text == "shape") shape = value;
  }
  if (keys != std::set<std::string>{"descr", "fortran_order", "shape"}) {
    std::vector<std::string> quoted;
    for (const std::string& key : keys) quoted.push_back(fmt::format("'{}'", key));
    fail("{}: header keys are [{}], expected exactly 'descr', 'fortran_order', 'shape'", context,
         fmt::join(quoted, ", "));
  }

  std::optional<DescrType> type;
  if (descr->kind == PyLiteral::Kind::string) type = parse_descr(descr->text, options);
  if (!type) {
    fail("unsupported dtype {:.80} for tensor '{}' in {} (supported: {})", descr->source, printable(name), where,
         kSupportedDtypes);
  }
  header.dtype = type->dtype;
  header.big_endian = type->big_endian;

  if (fortran_order->kind != PyLiteral::Kind::boolean) {
    fail("{}: 'fortran_order' is {:.40}, expected True or False", context, fortran_order->source);
  }
  header.fortran_order = fortran_order->boolean;

  if (shape->kind != PyLiteral::Kind::tuple) {
    fail("{}: 'shape' is {:.60}, expected a tuple of non-negative integers", context, shape->source);
  }
  // The product of the non-zero extents must fit too: strides and partial products are
  // computed in int64 even when a zero-length axis makes the tensor empty.
  std::uint64_t nonzero_product = 1;
  bool overflow = false;
  bool empty = false;
  for (const PyLiteral& extent : shape->items) {
    if (extent.kind != PyLiteral::Kind::integer || extent.integer < 0) {
      fail("{}: 'shape' is {:.60}, expected a tuple of non-negative integers", context, shape->source);
    }
    header.shape.push_back(extent.integer);
    empty |= extent.integer == 0;
    if (extent.integer > 0) {
      overflow |= __builtin_mul_overflow(nonzero_product, static_cast<std::uint64_t>(extent.integer), &nonzero_product);
    }
  }
  std::uint64_t max_bytes = 0;
  overflow |= nonzero_product > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  overflow |= __builtin_mul_overflow(nonzero_product, dtype_size(header.dtype), &max_bytes);
  overflow |= max_bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  header.data_bytes = empty ? 0 : max_bytes;
  if (overflow) fail("{}: shape {} holds more bytes than a signed 64-bit count can hold", context, shape->source);
  return header;
}

TensorView parse_npy(std::span<const std::byte> bytes, std::string name, std::string_view where,
                     const OpenOptions& options) {
  const NpyHeader header = parse_npy_header(bytes, name, where, options);
  const std::uint64_t present = bytes.size() - header.data_offset;
  if (present != header.data_bytes) {
    fail("{}: tensor '{}': {} with shape {} needs {} data bytes but {} follow the header{}", where, printable(name),
         dtype_name(header.dtype), describe_shape(header.shape), header.data_bytes, present,
         present < header.data_bytes ? " (truncated file?)" : "");
  }
  TensorView view;
  view.name = std::move(name);
  view.dtype = header.dtype;
  view.big_endian = header.big_endian;
  view.shape = header.shape;
  // Element strides of the logical (C-order) axes: Fortran order stores the first axis fastest.
  const std::size_t rank = header.shape.size();
  view.strides.assign(rank, 1);
  std::int64_t step = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t axis = header.fortran_order ? i : rank - 1 - i;
    view.strides[axis] = step;
    step *= header.shape[axis];
  }
  view.byte_size = header.data_bytes;
  view.file_offset = header.data_offset;
  view.data = header.data_bytes > 0 ? bytes.data() + header.data_offset : nullptr;
  return view;
}

std::unique_ptr<TensorFile> open_npy(std::shared_ptr<const MappedFile> mapping, const OpenOptions& options) {
  const std::string& path = mapping->path();
  auto file = std::make_unique<TensorFile>(path, "npy");
  file->add_tensor(parse_npy(mapping->bytes(), std::filesystem::path(path).stem().string(),
                             fmt::format("'{}'", path), options));
  file->set_mapping(std::move(mapping));
  return file;
}

namespace {

// The header of `tensor`; `given_bytes`, when set, must be what its shape needs.
std::vector<std::byte> npy_header_bytes(const TensorToWrite& tensor, std::optional<std::size_t> given_bytes) {
  std::uint64_t elements = 1;
  bool overflow = false;
  for (std::int64_t extent : tensor.shape) {
    if (extent < 0) {
      fail("tensor '{}': negative extent in shape {}", printable(tensor.name), describe_shape(tensor.shape));
    }
    overflow |= __builtin_mul_overflow(elements, static_cast<std::uint64_t>(extent), &elements);
  }
  std::uint64_t expected_bytes = 0;
  overflow |= __builtin_mul_overflow(elements, dtype_size(tensor.dtype), &expected_bytes);
  if (overflow) {
    fail("tensor '{}': shape {} of {} is too large (its byte count overflows 64 bits)", printable(tensor.name),
         describe_shape(tensor.shape), dtype_name(tensor.dtype));
  }
  if (given_bytes && expected_bytes != *given_bytes) {
    fail("tensor '{}': {} bytes given for {} with shape {}, expected {}", printable(tensor.name), *given_bytes,
         dtype_name(tensor.dtype), describe_shape(tensor.shape), expected_bytes);
  }

  // numpy has no bfloat16 or fp8: their bits go out as '<u2' / '|u1' (dtype.h's table).
  const DTypeInfo& info = dtype_info(tensor.dtype);
  const std::string descr = fmt::format("{}{}", info.size == 1 || info.kind == DTypeKind::raw ? '|' : '<', info.npy);
  // Exactly numpy's text (keys sorted, repr of each value, ", " after each), then the
  // spaces numpy leaves so the first axis can grow in place, then padding to 64 bytes.
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr,
                                   describe_shape(tensor.shape));
  if (!tensor.shape.empty()) {
    const std::size_t digits = fmt::formatted_size("{}", tensor.shape[0]);
    header.append(kGrowthAxisDigits - std::min(digits, kGrowthAxisDigits), ' ');
  }
  std::size_t preamble = 10;
  std::size_t padded = header.size() + 1;  // + '\n'
  padded += kArrayAlign - (preamble + padded) % kArrayAlign;
  if (padded > 0xFFFF) {
    preamble = 12;
    padded = header.size() + 1;
    padded += kArrayAlign - (preamble + padded) % kArrayAlign;
  }
  if (padded > 0xFFFFFFFFu) {
    fail("tensor '{}': rank {} is too large for a .npy header", printable(tensor.name), tensor.shape.size());
  }
  header.append(padded - header.size() - 1, ' ');
  header.push_back('\n');

  std::vector<std::byte> out(preamble + header.size());
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  out[6] = std::byte{preamble == 10 ? std::uint8_t{1} : std::uint8_t{2}};
  out[7] = std::byte{0};
  for (std::size_t i = 8; i < preamble; ++i) out[i] = static_cast<std::byte>((padded >> (8 * (i - 8))) & 0xFF);
  std::memcpy(out.data() + preamble, header.data(), header.size());
  return out;
}

}  // namespace

std::vector<std::byte> encode_npy_header(const TensorToWrite& tensor) {
  return npy_header_bytes(tensor, tensor.bytes.size());
}

std::vector<std::byte> encode_npy_header_for_shape(const TensorToWrite& tensor) {
  return npy_header_bytes(tensor, std::nullopt);
}

std::vector<std::byte> encode_npy(const TensorToWrite& tensor) {
  std::vector<std::byte> out = encode_npy_header(tensor);
  out.insert(out.end(), tensor.bytes.begin(), tensor.bytes.end());
  return out;
}

void write_npy(const std::string& path, const TensorToWrite& tensor) {
  // Header and data go out separately: no second copy of a large tensor in memory.
  const std::vector<std::byte> header = encode_npy_header(tensor);
  AtomicFileWriter writer(path);
  writer.write(header);
  writer.write(tensor.bytes);
  writer.commit();
}

}  // namespace tqlab
