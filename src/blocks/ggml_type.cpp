// The ggml type table (names, block sizes and bytes from ggml's type_traits in ggml/src/ggml.c,
// checked against libggml-base's ggml_type_name / ggml_blck_size / ggml_type_size by
// tests/ggml_reference_test.cpp) and the one dispatch from a type to its row decoder.
#include "blocks/ggml_type.h"

#include <array>
#include <cstring>
#include <string>

#include "blocks/iq4_blocks.h"
#include "blocks/k_quant_blocks.h"
#include "blocks/legacy_blocks.h"
#include "core/dtype.h"
#include "core/error.h"

namespace tqlab {
namespace {

// A decoder turns `blocks` whole blocks at x into blocks * block_values floats at y.
using RowDecoder = void (*)(const void* x, float* y, std::int64_t blocks);

struct TypeEntry {
  GgmlTypeTraits traits;
  RowDecoder decode;  // null: not decodable
};

// Scalar types: one value per block, read unaligned (a GGUF tensor's data is only 32-byte aligned
// as a whole, and a row view may start anywhere).
void decode_f32(const void* x, float* y, std::int64_t n) {
  std::memcpy(y, x, static_cast<std::size_t>(n) * sizeof(float));
}

template <float (*Convert)(std::uint16_t)>
void decode_16_bit(const void* x, float* y, std::int64_t n) {
  const auto* bytes = static_cast<const unsigned char*>(x);
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, bytes + 2 * i, 2);
    y[i] = Convert(bits);
  }
}

// Block types: each block copied to an aligned local first (a row view may start anywhere).
template <typename Block, int kValues, void (*Dequantize)(const Block*, float*, std::int64_t)>
void decode_blocks(const void* x, float* y, std::int64_t blocks) {
  const auto* bytes = static_cast<const unsigned char*>(x);
  for (std::int64_t i = 0; i < blocks; ++i) {
    Block block;
    std::memcpy(&block, bytes + i * sizeof(Block), sizeof(Block));
    Dequantize(&block, y + i * kValues, kValues);
  }
}

template <typename Block, void (*Dequantize)(const Block*, float*, std::int64_t)>
constexpr RowDecoder legacy = decode_blocks<Block, kQuantBlockSize, Dequantize>;
template <typename Block, void (*Dequantize)(const Block*, float*, std::int64_t)>
constexpr RowDecoder super = decode_blocks<Block, kSuperBlockSize, Dequantize>;

constexpr TypeEntry undefined{{nullptr, 0, 0, false}, nullptr};

constexpr TypeEntry entry(const char* name, std::int64_t block_values, std::int64_t block_bytes,
                          RowDecoder decode = nullptr) {
  return {{name, block_values, block_bytes, decode != nullptr}, decode};
}

// Indexed by type id; the retired ids stay undefined.
const std::array<TypeEntry, kGgmlTypeCount> kTypes = [] {
  std::array<TypeEntry, kGgmlTypeCount> types;
  types.fill(undefined);
  const auto set = [&](GgmlType type, TypeEntry value) { types[static_cast<std::uint32_t>(type)] = value; };
  set(GgmlType::F32, entry("f32", 1, 4, decode_f32));
  set(GgmlType::F16, entry("f16", 1, 2, decode_16_bit<half_to_float>));
  set(GgmlType::Q4_0, entry("q4_0", 32, 18, legacy<BlockQ4_0, dequantize_row_q4_0>));
  set(GgmlType::Q4_1, entry("q4_1", 32, 20, legacy<BlockQ4_1, dequantize_row_q4_1>));
  set(GgmlType::Q5_0, entry("q5_0", 32, 22, legacy<BlockQ5_0, dequantize_row_q5_0>));
  set(GgmlType::Q5_1, entry("q5_1", 32, 24, legacy<BlockQ5_1, dequantize_row_q5_1>));
  set(GgmlType::Q8_0, entry("q8_0", 32, 34, legacy<BlockQ8_0, dequantize_row_q8_0>));
  set(GgmlType::Q8_1, entry("q8_1", 32, 36));
  set(GgmlType::Q2_K, entry("q2_K", 256, 84, super<BlockQ2_K, dequantize_row_q2_K>));
  set(GgmlType::Q3_K, entry("q3_K", 256, 110, super<BlockQ3_K, dequantize_row_q3_K>));
  set(GgmlType::Q4_K, entry("q4_K", 256, 144, super<BlockQ4_K, dequantize_row_q4_K>));
  set(GgmlType::Q5_K, entry("q5_K", 256, 176, super<BlockQ5_K, dequantize_row_q5_K>));
  set(GgmlType::Q6_K, entry("q6_K", 256, 210, super<BlockQ6_K, dequantize_row_q6_K>));
  set(GgmlType::Q8_K, entry("q8_K", 256, 292));
  set(GgmlType::IQ2_XXS, entry("iq2_xxs", 256, 66));
  set(GgmlType::IQ2_XS, entry("iq2_xs", 256, 74));
  set(GgmlType::IQ3_XXS, entry("iq3_xxs", 256, 98));
  set(GgmlType::IQ1_S, entry("iq1_s", 256, 50));
  set(GgmlType::IQ4_NL, entry("iq4_nl", 32, 18, legacy<BlockIq4Nl, dequantize_row_iq4_nl>));
  set(GgmlType::IQ3_S, entry("iq3_s", 256, 110));
  set(GgmlType::IQ2_S, entry("iq2_s", 256, 82));
  set(GgmlType::IQ4_XS, entry("iq4_xs", 256, 136, super<BlockIq4Xs, dequantize_row_iq4_xs>));
  set(GgmlType::I8, entry("i8", 1, 1));
  set(GgmlType::I16, entry("i16", 1, 2));
  set(GgmlType::I32, entry("i32", 1, 4));
  set(GgmlType::I64, entry("i64", 1, 8));
  set(GgmlType::F64, entry("f64", 1, 8));
  set(GgmlType::IQ1_M, entry("iq1_m", 256, 56));
  set(GgmlType::BF16, entry("bf16", 1, 2, decode_16_bit<bf16_to_float>));
  set(GgmlType::TQ1_0, entry("tq1_0", 256, 54));
  set(GgmlType::TQ2_0, entry("tq2_0", 256, 66));
  set(GgmlType::MXFP4, entry("mxfp4", 32, 17));
  set(GgmlType::NVFP4, entry("nvfp4", 64, 36));
  set(GgmlType::Q1_0, entry("q1_0", 128, 18));
  set(GgmlType::Q2_0, entry("q2_0", 64, 18));
  return types;
}();

// "f32, f16, ...": the types tqlab decodes, for messages.
std::string decodable_type_names() {
  std::string names;
  for (const TypeEntry& type : kTypes) {
    if (type.decode == nullptr) continue;
    names += names.empty() ? "" : ", ";
    names += type.traits.name;
  }
  return names;
}

}  // namespace

const GgmlTypeTraits* ggml_type_traits(std::uint32_t type_id) {
  if (type_id >= kGgmlTypeCount || kTypes[type_id].traits.name == nullptr) return nullptr;
  return &kTypes[type_id].traits;
}

const GgmlTypeTraits& ggml_type_traits(GgmlType type) { return kTypes[static_cast<std::uint32_t>(type)].traits; }

void dequantize_ggml_row(GgmlType type, const void* x, float* y, std::int64_t n) {
  const std::uint32_t id = static_cast<std::uint32_t>(type);
  const TypeEntry* type_entry = id < kGgmlTypeCount ? &kTypes[id] : nullptr;
  if (type_entry == nullptr || type_entry->traits.name == nullptr) {
    fail("ggml type id {} is not a type ggml defines", id);
  }
  const GgmlTypeTraits& traits = type_entry->traits;
  if (n < 0 || n % traits.block_values != 0) {
    fail("ggml type {}: a row of {} values is not a whole number of blocks of {}", traits.name, n,
         traits.block_values);
  }
  if (type_entry->decode == nullptr) {
    fail("ggml type {} (id {}) cannot be decoded by tqlab (it decodes {})", traits.name, id, decodable_type_names());
  }
  type_entry->decode(x, y, n / traits.block_values);
}

}  // namespace tqlab
