// GGUF files made by hand for tests (the layout of io/gguf.h), so that each
// test can break exactly one field. Written from the format description, not
// with the reader under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tqlab::testing {

/// Little-endian bytes of a number.
template <typename T>
std::string le_bytes(T value) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

inline std::string gguf_string(std::string_view text) {
  return le_bytes<std::uint64_t>(text.size()) + std::string(text);
}

/// One GGUF file under construction.
struct GgufBuilder {
  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> ne;  ///< ggml order: ne[0] is the row length
    std::uint32_t type = 0;         ///< ggml type id
    std::string data;               ///< the stored bytes
    std::optional<std::uint64_t> offset;  ///< default: the next aligned offset
  };

  std::uint32_t version = 3;
  std::uint64_t alignment = 32;  ///< used to place tensors (also set general.alignment to change it)
  std::vector<std::string> records;  ///< encoded key/value pairs
  std::vector<Tensor> tensors;
  std::optional<std::uint64_t> tensor_count, kv_count;  ///< override the true counts

  /// A key with a value of raw type `type` and already encoded `payload`.
  GgufBuilder& kv_raw(std::string_view key, std::uint32_t type, const std::string& payload) {
    records.push_back(gguf_string(key) + le_bytes(type) + payload);
    return *this;
  }
  GgufBuilder& kv_u32(std::string_view key, std::uint32_t value) { return kv_raw(key, 4, le_bytes(value)); }
  GgufBuilder& kv_i32(std::string_view key, std::int32_t value) { return kv_raw(key, 5, le_bytes(value)); }
  GgufBuilder& kv_f32(std::string_view key, float value) { return kv_raw(key, 6, le_bytes(value)); }
  GgufBuilder& kv_bool(std::string_view key, bool value) { return kv_raw(key, 7, std::string(1, value ? 1 : 0)); }
  GgufBuilder& kv_string(std::string_view key, std::string_view value) { return kv_raw(key, 8, gguf_string(value)); }
  GgufBuilder& kv_strings(std::string_view key, const std::vector<std::string>& values) {
    std::string payload = le_bytes<std::uint32_t>(8) + le_bytes<std::uint64_t>(values.size());
    for (const std::string& value : values) payload += gguf_string(value);
    return kv_raw(key, 9, payload);
  }
  GgufBuilder& kv_f32s(std::string_view key, const std::vector<float>& values) {
    std::string payload = le_bytes<std::uint32_t>(6) + le_bytes<std::uint64_t>(values.size());
    for (float value : values) payload += le_bytes(value);
    return kv_raw(key, 9, payload);
  }
  GgufBuilder& tensor(std::string name, std::vector<std::uint64_t> ne, std::uint32_t type, std::string data) {
    tensors.push_back({std::move(name), std::move(ne), type, std::move(data), std::nullopt});
    return *this;
  }
  /// An F32 tensor of `values` with ggml dims `ne`.
  GgufBuilder& f32_tensor(std::string name, std::vector<std::uint64_t> ne, const std::vector<float>& values) {
    std::string data;
    for (float value : values) data += le_bytes(value);
    return tensor(std::move(name), std::move(ne), 0, data);
  }

  std::uint64_t padding(std::uint64_t size) const { return (alignment - size % alignment) % alignment; }

  /// The file's bytes.
  std::string bytes() const {
    std::string out = "GGUF" + le_bytes(version) + le_bytes<std::uint64_t>(tensor_count.value_or(tensors.size())) +
                      le_bytes<std::uint64_t>(kv_count.value_or(records.size()));
    for (const std::string& record : records) out += record;
    std::uint64_t offset = 0;
    for (const Tensor& t : tensors) {
      out += gguf_string(t.name) + le_bytes<std::uint32_t>(static_cast<std::uint32_t>(t.ne.size()));
      for (std::uint64_t extent : t.ne) out += le_bytes(extent);
      out += le_bytes(t.type) + le_bytes(t.offset.value_or(offset));
      offset += t.data.size() + padding(t.data.size());
    }
    out += std::string(padding(out.size()), '\0');
    for (const Tensor& t : tensors) out += t.data + std::string(padding(t.data.size()), '\0');
    return out;
  }
};

}  // namespace tqlab::testing
