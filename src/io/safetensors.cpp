// safetensors reader and writer. Format, byte layout and validation rules:
// see safetensors.h (spec: huggingface/safetensors README).
#include "io/safetensors.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/text.h"

namespace tqlab {
namespace {

using nlohmann::json;

constexpr std::uint64_t kLengthFieldBytes = 8;
// The reference implementation refuses headers above 100 MB (MAX_HEADER_SIZE):
// a corrupt length must not make us parse gigabytes of tensor data as JSON.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
constexpr std::uint64_t kMinHeaderBytes = 2;  // "{}"
constexpr std::size_t kDataAlignment = 8;     // writers pad so the buffer starts aligned
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kEntryKeys = "dtype, shape and data_offsets";
// Long JSON values are cut to this many characters in error messages.
constexpr std::size_t kMaxQuotedChars = 80;

/// One tensor entry of a header, after validation.
struct HeaderEntry {
  std::string name;
  DType dtype = DType::f32;
  std::string dtype_code;            ///< as written in the file, e.g. "F16"
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;           ///< data_offsets, relative to the data buffer
  std::uint64_t end = 0;
};

/// product(shape) * item_bytes, or nullopt when the product of the non-zero
/// extents times item_bytes exceeds INT64_MAX. Extents must be non-negative.
std::optional<std::uint64_t> checked_byte_count(std::span<const std::int64_t> shape, std::size_t item_bytes) {
  // TensorView counts elements and strides in int64 and multiplies extents
  // left to right, so [2^40, 2^40, 0] would overflow there although it holds
  // no element: the bound applies to the non-zero extents.
  std::uint64_t bytes = item_bytes;
  bool empty = false;
  for (std::int64_t extent : shape) {
    if (extent == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(extent), &bytes)) return std::nullopt;
  }
  if (bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  return empty ? 0 : bytes;
}

std::uint64_t load_u64_le(const std::byte* at) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<std::uint64_t>(at[i]);
  return value;
}

std::string quoted(const json& value) { return printable(value.dump(), kMaxQuotedChars); }

/// The value if it is a JSON integer in [0, INT64_MAX].
std::optional<std::uint64_t> as_non_negative(const json& value) {
  // nlohmann stores non-negative integer literals as number_unsigned, negative ones as number_integer.
  if (!value.is_number_unsigned()) return std::nullopt;
  const auto number = value.get<std::uint64_t>();
  if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  return number;
}

// nlohmann::json silently keeps the last of duplicate keys; two entries for one
// tensor name make a file ambiguous, so this SAX handler refuses them while the
// DOM is built. (A parser callback would do it too, but nlohmann's callback
// parser scans the enclosing object at every object's end: 10 000 layers'
// tensors took 18 s.) One set of seen keys per object currently open.
class DuplicateRefusingSax {
 public:
  DuplicateRefusingSax(json& result, const std::string& path) : dom_(result, /*allow_exceptions=*/true), path_(path) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const json::string_t& text) { return dom_.number_float(value, text); }
  bool string(json::string_t& value) { return dom_.string(value); }
  bool binary(json::binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t size) {
    open_objects_.emplace_back();
    return dom_.start_object(size);
  }
  bool key(json::string_t& key) {
    if (!open_objects_.back().insert(key).second) {
      if (open_objects_.size() == 1)
        fail("'{}': the safetensors header lists tensor '{}' twice", path_, printable(key));
      fail("'{}': the safetensors header has key \"{}\" twice in one object", path_, printable(key));
    }
    return dom_.key(key);
  }
  bool end_object() {
    open_objects_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t size) { return dom_.start_array(size); }
  bool end_array() { return dom_.end_array(); }
  /// Throws the parser's exception (parse_error, or out_of_range for "1e400").
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& error) {
    return dom_.parse_error(position, token, error);
  }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& path_;
  std::vector<std::set<std::string>> open_objects_;
};

json parse_header_json(const std::string& path, std::string_view text) {
  // The format requires UTF-8 (the reference implementation refuses anything else): say
  // where the first stray byte is, rather than the parser's echo of the bytes before it.
  if (const std::size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) {
    const std::size_t context = std::min<std::size_t>(bad, 24);
    fail("'{}': the safetensors header is not UTF-8, as the format requires: byte 0x{:02X} at header byte {}, "
         "after \"{}\"",
         path, static_cast<unsigned char>(text[bad]), bad, printable(text.substr(bad - context, context)));
  }
  try {
    json result;
    DuplicateRefusingSax sax(result, path);
    json::sax_parse(text.begin(), text.end(), &sax);
    return result;
  } catch (const json::exception& error) {
    // parse_error, or out_of_range for a number beyond double ("1e400").
    // what() starts with "[json.exception.parse_error.101] "; the rest says where and why, and
    // echoes the token read so far, which may be a long name: keep the message one short line.
    std::string_view reason = error.what();
    if (const auto bracket = reason.find("] "); bracket != std::string_view::npos) reason.remove_prefix(bracket + 2);
    fail("'{}': the safetensors header ({} bytes) is not valid JSON: {}", path, text.size(), printable(reason, 240));
  }
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& value) {
  if (!value.is_object()) {
    fail("'{}': \"__metadata__\" is a JSON {}, expected an object of string keys to string values", path,
         value.type_name());
  }
  std::map<std::string, std::string> metadata;
  for (const auto& item : value.items()) {
    if (!item.value().is_string()) {
      fail("'{}': \"__metadata__\" key \"{}\" holds {}, expected a string (metadata maps strings to strings)",
           path, printable(item.key()), quoted(item.value()));
    }
    metadata.emplace(item.key(), item.value().get<std::string>());
  }
  return metadata;
}

/// Validates one tensor entry against the data buffer's size; touches no data.
HeaderEntry parse_entry(const std::string& path, const std::string& name, const json& value,
                        std::uint64_t buffer_bytes) {
  const std::string shown = printable(name);
  if (!value.is_object()) {
    fail("'{}': tensor '{}' is described by a JSON {}, expected an object with {}", path, shown, value.type_name(),
         kEntryKeys);
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(key)) fail("'{}': tensor '{}' has no \"{}\" (an entry holds {})", path, shown, key, kEntryKeys);
  }
  if (value.size() != 3) {
    for (const auto& item : value.items()) {
      const std::string& key = item.key();
      if (key != "dtype" && key != "shape" && key != "data_offsets") {
        fail("'{}': tensor '{}' has an unexpected key \"{}\" (an entry holds exactly {})", path, shown,
             printable(key), kEntryKeys);
      }
    }
  }

  HeaderEntry entry;
  entry.name = name;
  const json& dtype = value.at("dtype");
  if (!dtype.is_string()) {
    fail("'{}': tensor '{}': dtype is {}, expected a string such as \"F16\"", path, shown, quoted(dtype));
  }
  entry.dtype_code = dtype.get<std::string>();
  const std::optional<DType> parsed_dtype = dtype_from_safetensors(entry.dtype_code);
  if (!parsed_dtype) {
    fail("'{}': tensor '{}' has unsupported dtype '{}' (supported: {})", path, shown, printable(entry.dtype_code),
         safetensors_codes());
  }
  entry.dtype = *parsed_dtype;

  const json& shape = value.at("shape");
  if (!shape.is_array()) {
    fail("'{}': tensor '{}': shape is {}, expected an array of non-negative integers", path, shown, quoted(shape));
  }
  for (const json& extent : shape) {
    const std::optional<std::uint64_t> checked = as_non_negative(extent);
    if (!checked) {
      fail("'{}': tensor '{}': shape {} holds {}, expected non-negative integers", path, shown, quoted(shape),
           quoted(extent));
    }
    entry.shape.push_back(static_cast<std::int64_t>(*checked));
  }

  const json& offsets = value.at("data_offsets");
  std::optional<std::uint64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = as_non_negative(offsets[0]);
    end = as_non_negative(offsets[1]);
  }
  if (!begin || !end) {
    fail("'{}': tensor '{}': data_offsets is {}, expected [begin, end], two non-negative integers", path, shown,
         quoted(offsets));
  }
  entry.begin = *begin;
  entry.end = *end;
  if (entry.begin > entry.end) {
    fail("'{}': tensor '{}': data_offsets [{}, {}] begin after they end", path, shown, entry.begin, entry.end);
  }

  const std::optional<std::uint64_t> bytes = checked_byte_count(entry.shape, dtype_size(entry.dtype));
  if (!bytes) {
    fail("'{}': tensor '{}': shape [{}] of {} is too large (its byte count overflows 63 bits)", path, shown,
         fmt::join(entry.shape, ", "), entry.dtype_code);
  }
  if (entry.end - entry.begin != *bytes) {
    fail("'{}': tensor '{}': shape [{}] of {} needs {} bytes, but data_offsets [{}, {}] span {}", path, shown,
         fmt::join(entry.shape, ", "), entry.dtype_code, *bytes, entry.begin, entry.end, entry.end - entry.begin);
  }
  if (entry.end > buffer_bytes) {
    fail("'{}': tensor '{}': data_offsets [{}, {}] run past the end of the {}-byte data buffer (file truncated?)",
         path, shown, entry.begin, entry.end, buffer_bytes);
  }
  return entry;
}

/// Checks that `entries` (sorted by offset) tile [0, buffer_bytes) exactly.
void check_buffer_tiling(const std::string& path, const std::vector<HeaderEntry>& entries,
                         std::uint64_t buffer_bytes) {
  std::uint64_t covered = 0;  // entries so far cover [0, covered)
  const HeaderEntry* previous = nullptr;
  for (const HeaderEntry& entry : entries) {
    if (entry.begin < covered) {
      fail("'{}': tensors '{}' (data_offsets [{}, {}]) and '{}' (data_offsets [{}, {}]) overlap", path,
           printable(previous->name), previous->begin, previous->end, printable(entry.name), entry.begin, entry.end);
    }
    if (entry.begin > covered) {
      fail("'{}': bytes [{}, {}) of the data buffer, before tensor '{}', belong to no tensor "
           "(safetensors tensors cover the buffer without gaps)",
           path, covered, entry.begin, printable(entry.name));
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != buffer_bytes) {
    fail("'{}': the last {} bytes of the {}-byte data buffer belong to no tensor ({}trailing garbage, or a "
         "header entry is missing)",
         path, buffer_bytes - covered, buffer_bytes,
         previous ? fmt::format("tensor '{}' ends at {}; ", printable(previous->name), previous->end) : std::string());
  }
}

}  // namespace

std::unique_ptr<TensorFile> open_safetensors(std::shared_ptr<const MappedFile> mapping) {
  const std::string path = mapping->path();
  const std::span<const std::byte> file = mapping->bytes();
  if (file.size() < kLengthFieldBytes + kMinHeaderBytes) {
    fail("'{}' is too short for a safetensors file: {} bytes, expected an 8-byte header length and a JSON header",
         path, file.size());
  }
  const std::uint64_t header_bytes = load_u64_le(file.data());
  if (header_bytes > kMaxHeaderBytes) {
    fail("'{}': safetensors header length {} exceeds the {}-byte limit (corrupt or not a safetensors file)", path,
         header_bytes, kMaxHeaderBytes);
  }
  if (header_bytes > file.size() - kLengthFieldBytes) {
    fail("'{}': safetensors header length {} runs past the end of the {}-byte file (truncated?)", path,
         header_bytes, file.size());
  }
  if (header_bytes < kMinHeaderBytes) {
    fail("'{}': safetensors header length {} is too small for a JSON object", path, header_bytes);
  }

  const std::string_view header_text(reinterpret_cast<const char*>(file.data() + kLengthFieldBytes), header_bytes);
  const json header = parse_header_json(path, header_text);
  if (!header.is_object()) {
    fail("'{}': the safetensors header is a JSON {}, expected an object of tensor entries", path,
         header.type_name());
  }

  const std::uint64_t data_start = kLengthFieldBytes + header_bytes;
  const std::uint64_t buffer_bytes = file.size() - data_start;
  std::map<std::string, std::string> metadata;
  std::vector<HeaderEntry> entries;
  entries.reserve(header.size());
  for (const auto& item : header.items()) {
    if (item.key() == kMetadataKey) {
      metadata = parse_metadata(path, item.value());
    } else {
      entries.push_back(parse_entry(path, item.key(), item.value(), buffer_bytes));
    }
  }
  // nlohmann::json sorts keys by name, so the file's order is gone; offset
  // order is the order writers lay tensors out in, so it is the best stand-in.
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  check_buffer_tiling(path, entries, buffer_bytes);

  auto result = std::make_unique<TensorFile>(path, "safetensors");
  for (HeaderEntry& entry : entries) {
    TensorView view;
    view.name = std::move(entry.name);
    view.dtype = entry.dtype;
    view.strides = c_order_strides(entry.shape);
    view.shape = std::move(entry.shape);
    view.file_offset = data_start + entry.begin;
    view.byte_size = entry.end - entry.begin;
    view.data = view.byte_size > 0 ? file.data() + view.file_offset : nullptr;
    result->add_tensor(std::move(view));
  }
  result->set_metadata(std::move(metadata));
  result->set_mapping(std::move(mapping));
  return result;
}

std::vector<std::byte> encode_safetensors_header(const std::string& path, std::span<const TensorToWrite> tensors,
                                                 const std::map<std::string, std::string>& metadata) {
  // A JSON header holds UTF-8 only; names from an .npz member (bytes) may be anything else.
  const auto not_utf8 = [&](const std::string& what) {
    fail("'{}': {} is not valid UTF-8, which a safetensors header requires (.npz keeps such names)", path, what);
  };
  for (const auto& [key, value] : metadata) {
    if (!is_valid_utf8(key)) not_utf8(fmt::format("metadata key '{}'", printable(key)));
    if (!is_valid_utf8(value)) {
      not_utf8(fmt::format("the value '{}' of metadata key '{}'", printable(value), printable(key)));
    }
  }
  for (const TensorToWrite& tensor : tensors) {
    if (!is_valid_utf8(tensor.name)) not_utf8(fmt::format("tensor name '{}'", printable(tensor.name)));
  }
  // ordered_json keeps insertion order, so the header lists tensors in the caller's order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const TensorToWrite& tensor : tensors) {
    if (tensor.name == kMetadataKey) {
      fail("'{}': a tensor cannot be named '{}': safetensors reserves that key for metadata", path, kMetadataKey);
    }
    if (!names.insert(tensor.name).second) {
      fail("'{}': tensor '{}' is given twice; tensor names in one file must be unique", path, printable(tensor.name));
    }
    if (std::any_of(tensor.shape.begin(), tensor.shape.end(), [](std::int64_t extent) { return extent < 0; })) {
      fail("'{}': tensor '{}' has shape [{}], expected non-negative extents", path, printable(tensor.name),
           fmt::join(tensor.shape, ", "));
    }
    const std::optional<std::uint64_t> bytes = checked_byte_count(tensor.shape, dtype_size(tensor.dtype));
    if (!bytes) {
      fail("'{}': tensor '{}': shape [{}] of {} is too large (its byte count overflows 63 bits)", path,
           printable(tensor.name), fmt::join(tensor.shape, ", "), dtype_name(tensor.dtype));
    }
    header[tensor.name] = {{"dtype", dtype_info(tensor.dtype).safetensors},
                           {"shape", tensor.shape},
                           {"data_offsets", nlohmann::ordered_json::array({offset, offset + *bytes})}};
    offset += *bytes;
  }

  std::string header_text = header.dump();
  // The length field is 8 bytes, so padding the header to a multiple of 8
  // starts the data buffer at a multiple of 8: every dtype is then aligned
  // for readers that map the file and cast.
  header_text.append((kDataAlignment - header_text.size() % kDataAlignment) % kDataAlignment, ' ');

  std::vector<std::byte> out(kLengthFieldBytes + header_text.size());
  std::uint64_t length = header_text.size();
  for (std::size_t i = 0; i < kLengthFieldBytes; ++i) {
    out[i] = static_cast<std::byte>(length & 0xFF);
    length >>= 8;
  }
  std::memcpy(out.data() + kLengthFieldBytes, header_text.data(), header_text.size());
  return out;
}

void write_safetensors(const std::string& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata) {
  for (const TensorToWrite& tensor : tensors) {
    const std::optional<std::uint64_t> bytes = checked_byte_count(tensor.shape, dtype_size(tensor.dtype));
    if (bytes && tensor.bytes.size() != *bytes) {
      fail("'{}': tensor '{}' comes with {} bytes, expected product of shape [{}] times {} bytes per {}", path,
           printable(tensor.name), tensor.bytes.size(), fmt::join(tensor.shape, ", "), dtype_size(tensor.dtype),
           dtype_name(tensor.dtype));
    }
  }
  const std::vector<std::byte> header = encode_safetensors_header(path, tensors, metadata);
  AtomicFileWriter writer(path);
  writer.write(header);
  for (const TensorToWrite& tensor : tensors) writer.write(tensor.bytes);
  writer.commit();
}

}  // namespace tqlab
