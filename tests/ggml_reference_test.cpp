// tqlab's block codecs against ggml itself: libggml-base.so from the pinned llama.cpp package
// (tools/llamacpp_reference, installed by tools/install_deps.sh), loaded with dlopen. Checked:
// - the type table: name, block size and bytes of every id ggml defines;
// - q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl: encoded bytes and decoded floats bit-identical to
//   quantize_row_*_ref / dequantize_row_* on adversarial rows (ties, zeros, subnormals, huge values,
//   one outlier, constant rows, random); ggml leaves an all-zero iq4_nl block's codes unset, so
//   there the decoded values are compared;
// - q2_K .. q6_K and iq4_xs: decoded floats bit-identical on blocks made by ggml's own quantizers
//   and on random bytes (finite fp16 fields).
// A missing library is a failure, never a skip.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "blocks/ggml_type.h"
#include "blocks/iq4_blocks.h"
#include "blocks/legacy_blocks.h"
#include "core/dtype.h"
#include "core/rng.h"

namespace tqlab {
namespace {

constexpr const char* kLibraryPath =
    TQLAB_LLAMACPP_REFERENCE_DIR "/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so";

using QuantizeRow = void (*)(const float*, void*, std::int64_t);
using DequantizeRow = void (*)(const void*, float*, std::int64_t);

// libggml-base, opened once for the whole test binary.
struct GgmlLibrary {
  void* handle = nullptr;
  std::string error;

  GgmlLibrary() {
    handle = dlopen(kLibraryPath, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      error = std::string("cannot load llama.cpp's libggml-base (") + dlerror() +
              "): run tools/install_deps.sh to install the pinned llama.cpp reference";
    }
  }

  template <typename Function>
  Function symbol(const std::string& name) const {
    void* address = handle != nullptr ? dlsym(handle, name.c_str()) : nullptr;
    EXPECT_NE(address, nullptr) << "libggml-base has no symbol " << name;
    return reinterpret_cast<Function>(address);
  }
};

const GgmlLibrary& ggml() {
  static const GgmlLibrary library;
  return library;
}

#define REQUIRE_GGML() ASSERT_EQ(ggml().handle != nullptr, true) << ggml().error

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Counts (and reports the first few) positions where two float rows differ in their bits (in
// their values where `values_only(i)`: there +0 equals -0).
void expect_same_floats(const std::vector<float>& ours, const std::vector<float>& theirs, const std::string& what,
                        const std::function<bool(std::size_t)>& values_only = nullptr) {
  ASSERT_EQ(ours.size(), theirs.size());
  int reported = 0;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    if (same_bits(ours[i], theirs[i]) || (values_only && values_only(i) && ours[i] == theirs[i])) continue;
    ++differing;
    if (reported++ < 4) ADD_FAILURE() << what << ": value " << i << " tqlab " << ours[i] << " ggml " << theirs[i];
  }
  EXPECT_EQ(differing, 0u) << what;
}

// ------------------------------------------------------------------ adversarial rows

constexpr int kBlock = 32;

// Named rows, each a whole number of blocks of 32 (and of 256 where `super` asks for it).
struct Row {
  std::string name;
  std::vector<float> x;
};

std::vector<float> gaussian_row(std::int64_t n, double scale, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& v : x) v = static_cast<float>(scale * rng.gaussian());
  return x;
}

std::vector<Row> adversarial_rows() {
  std::vector<Row> rows;
  rows.push_back({"zeros", std::vector<float>(2 * kBlock, 0.0f)});
  rows.push_back({"negative zeros", std::vector<float>(kBlock, -0.0f)});
  rows.push_back({"constant positive", std::vector<float>(kBlock, 0.7f)});
  rows.push_back({"constant negative", std::vector<float>(kBlock, -3.25f)});
  // Ties of every rounding rule: the block's extreme makes d a power of two, the rest sit on
  // half steps (q4_0: max -8, q5_0: max -16, q8_0: amax 127, q4_1/q5_1: min 0, max 15 / 31).
  for (const float extreme : {-8.0f, 8.0f, -16.0f, 16.0f, 127.0f, -127.0f, 15.0f, 31.0f}) {
    std::vector<float> x(kBlock);
    x[0] = extreme;
    for (int j = 1; j < kBlock; ++j) x[j] = (static_cast<float>(j % 17) - 8.0f) * (std::fabs(extreme) / 16.0f) + 0.5f;
    for (int j = 1; j < kBlock; j += 3) x[j] = std::round(x[j]) + 0.5f;
    rows.push_back({"ties around " + std::to_string(extreme), x});
  }
  {
    std::vector<float> x(kBlock);
    for (int j = 0; j < kBlock; ++j) x[j] = static_cast<float>(j) - 0.5f;  // q4_1 / q5_1 half steps
    x[0] = 0.0f;
    rows.push_back({"half steps from min 0", x});
  }
  {
    // iq4_nl: max -127 makes the first scale 1, so grid midpoints are exact ties.
    std::vector<float> x(kBlock);
    x[0] = -127.0f;
    for (int j = 1; j < kBlock; ++j) {
      const int k = j % 15;
      x[j] = (kIq4NlGrid[k] + kIq4NlGrid[k + 1]) / 2.0f;
    }
    rows.push_back({"grid midpoints", x});
  }
  {
    std::vector<float> x(2 * kBlock);
    for (int j = 0; j < 2 * kBlock; ++j) x[j] = (j % 2 ? -1.0f : 1.0f) * 1e-40f * static_cast<float>(j + 1);
    rows.push_back({"subnormals", x});
  }
  {
    std::vector<float> x = gaussian_row(kBlock, 1e-38, 7);  // scales below 2^-126
    rows.push_back({"scale below 2^-126", x});
  }
  rows.push_back({"fp16-subnormal scales", gaussian_row(2 * kBlock, 1e-6, 8)});
  rows.push_back({"tiny, below iq4_nl's 1e-15", gaussian_row(kBlock, 1e-17, 9)});
  rows.push_back({"huge (fp16 scale overflows)", gaussian_row(kBlock, 1e30, 10)});
  {
    std::vector<float> x(kBlock, 3.0e38f);
    for (int j = 0; j < kBlock; j += 2) x[j] = -3.0e38f;  // max - min overflows to Inf
    rows.push_back({"+-3e38", x});
  }
  rows.push_back({"largest fp16 scale", std::vector<float>(kBlock, 65504.0f * 8.0f)});
  {
    std::vector<float> x = gaussian_row(4 * kBlock, 1.0, 11);
    x[37] = 1000.0f;
    rows.push_back({"one outlier", x});
  }
  rows.push_back({"random N(0,1)", gaussian_row(64 * kBlock, 1.0, 12)});
  rows.push_back({"random N(0,1e-3)", gaussian_row(16 * kBlock, 1e-3, 13)});
  rows.push_back({"random N(0,300)", gaussian_row(16 * kBlock, 300.0, 14)});
  return rows;
}

// ------------------------------------------------------------------ blocks of 32

// Encodes every adversarial row with ggml's reference quantizer and ours and compares the bytes
// (or, where `compare_bytes` says no, only the decoded floats), and both decoders on ggml's bytes.
template <typename Block>
void check_block_format(const std::string& name, void (*quantize)(const float*, Block*, std::int64_t),
                        void (*dequantize)(const Block*, float*, std::int64_t),
                        const std::function<bool(const float* block_x)>& compare_bytes) {
  const auto ggml_quantize = ggml().symbol<QuantizeRow>("quantize_row_" + name + "_ref");
  const auto ggml_dequantize = ggml().symbol<DequantizeRow>("dequantize_row_" + name);
  ASSERT_TRUE(ggml_quantize != nullptr && ggml_dequantize != nullptr);
  for (const Row& row : adversarial_rows()) {
    SCOPED_TRACE(name + ", " + row.name);
    const std::int64_t n = static_cast<std::int64_t>(row.x.size());
    const std::size_t blocks = row.x.size() / kBlock;
    std::vector<Block> theirs(blocks), ours(blocks);
    std::memset(theirs.data(), 0, blocks * sizeof(Block));
    ggml_quantize(row.x.data(), theirs.data(), n);
    quantize(row.x.data(), ours.data(), n);
    for (std::size_t b = 0; b < blocks; ++b) {
      if (!compare_bytes(row.x.data() + b * kBlock)) continue;
      EXPECT_EQ(std::memcmp(&ours[b], &theirs[b], sizeof(Block)), 0) << "block " << b << " bytes differ";
    }
    std::vector<float> decoded_ours(row.x.size()), decoded_theirs(row.x.size()), ours_of_theirs(row.x.size());
    dequantize(ours.data(), decoded_ours.data(), n);
    ggml_dequantize(theirs.data(), decoded_theirs.data(), n);
    dequantize(theirs.data(), ours_of_theirs.data(), n);
    const auto unset_codes = [&](std::size_t i) { return !compare_bytes(row.x.data() + i / kBlock * kBlock); };
    expect_same_floats(decoded_ours, decoded_theirs, "decoded from each side's own bytes", unset_codes);
    expect_same_floats(ours_of_theirs, decoded_theirs, "ggml's bytes decoded by each side");
  }
}

bool always(const float*) { return true; }

TEST(GgmlReferenceTest, Q4_0) {
  REQUIRE_GGML();
  check_block_format<BlockQ4_0>("q4_0", quantize_row_q4_0, dequantize_row_q4_0, always);
}

TEST(GgmlReferenceTest, Q4_1) {
  REQUIRE_GGML();
  check_block_format<BlockQ4_1>("q4_1", quantize_row_q4_1, dequantize_row_q4_1, always);
}

TEST(GgmlReferenceTest, Q5_0) {
  REQUIRE_GGML();
  check_block_format<BlockQ5_0>("q5_0", quantize_row_q5_0, dequantize_row_q5_0, always);
}

TEST(GgmlReferenceTest, Q5_1) {
  REQUIRE_GGML();
  check_block_format<BlockQ5_1>("q5_1", quantize_row_q5_1, dequantize_row_q5_1, always);
}

TEST(GgmlReferenceTest, Q8_0) {
  REQUIRE_GGML();
  check_block_format<BlockQ8_0>("q8_0", quantize_row_q8_0, dequantize_row_q8_0, always);
}

TEST(GgmlReferenceTest, Iq4Nl) {
  REQUIRE_GGML();
  // ggml leaves the codes of a block with max |x| < 1e-15 unset (its scale is 0).
  check_block_format<BlockIq4Nl>("iq4_nl", quantize_row_iq4_nl, dequantize_row_iq4_nl, [](const float* x) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    return amax >= 1e-15f;
  });
}

// ------------------------------------------------------------------ super-blocks, decode only

constexpr std::int64_t kSuper = 256;

// Decodes `bytes` (n values of `type`) with ggml and with dequantize_ggml_row.
void check_decode(GgmlType type, const std::vector<std::uint8_t>& bytes, std::int64_t n, const std::string& what) {
  const std::string name = ggml_type_traits(type).name;
  const auto ggml_dequantize = ggml().symbol<DequantizeRow>("dequantize_row_" + name);
  ASSERT_NE(ggml_dequantize, nullptr);
  std::vector<float> ours(static_cast<std::size_t>(n)), theirs(static_cast<std::size_t>(n));
  ggml_dequantize(bytes.data(), theirs.data(), n);
  dequantize_ggml_row(type, bytes.data(), ours.data(), n);
  expect_same_floats(ours, theirs, name + ", " + what);
}

// Random bytes whose fp16 fields (at the given byte offsets of each block) are random finite values.
std::vector<std::uint8_t> random_blocks(GgmlType type, std::int64_t blocks, const std::vector<int>& fp16_offsets,
                                        std::uint64_t seed) {
  const auto block_bytes = static_cast<std::size_t>(ggml_type_traits(type).block_bytes);
  Rng rng(seed);
  std::vector<std::uint8_t> bytes(block_bytes * static_cast<std::size_t>(blocks));
  for (std::uint8_t& byte : bytes) byte = static_cast<std::uint8_t>(rng.next_u64());
  for (std::int64_t b = 0; b < blocks; ++b) {
    for (const int offset : fp16_offsets) {
      const std::uint16_t half = float_to_half(static_cast<float>(rng.gaussian() * 1e-2));
      std::memcpy(bytes.data() + b * block_bytes + offset, &half, 2);
    }
  }
  return bytes;
}

struct SuperType {
  GgmlType type;
  std::vector<int> fp16_offsets;  // where the block's fp16 fields sit (k_quant_blocks.h, iq4_blocks.h)
};

const std::vector<SuperType> kSuperTypes = {
    {GgmlType::Q2_K, {80, 82}}, {GgmlType::Q3_K, {108}}, {GgmlType::Q4_K, {0, 2}},
    {GgmlType::Q5_K, {0, 2}},   {GgmlType::Q6_K, {208}}, {GgmlType::IQ4_XS, {0}},
};

TEST(GgmlReferenceTest, SuperBlocksMadeByGgmlDecodeIdentically) {
  REQUIRE_GGML();
  for (const SuperType& super : kSuperTypes) {
    const std::string name = ggml_type_traits(super.type).name;
    const auto ggml_quantize = ggml().symbol<QuantizeRow>("quantize_row_" + name + "_ref");
    ASSERT_NE(ggml_quantize, nullptr);
    for (const double scale : {1.0, 1e-3, 50.0}) {
      std::vector<float> x = gaussian_row(8 * kSuper, scale, 20 + static_cast<std::uint64_t>(super.type));
      x[100] *= 30.0f;  // an outlier
      std::fill(x.begin() + 3 * kSuper, x.begin() + 4 * kSuper, 0.0f);  // a zero super-block
      const auto block_bytes = static_cast<std::size_t>(ggml_type_traits(super.type).block_bytes);
      std::vector<std::uint8_t> bytes(block_bytes * x.size() / kSuper);
      ggml_quantize(x.data(), bytes.data(), static_cast<std::int64_t>(x.size()));
      check_decode(super.type, bytes, static_cast<std::int64_t>(x.size()), "ggml's blocks at scale " +
                   std::to_string(scale));
    }
  }
}

TEST(GgmlReferenceTest, RandomBytesDecodeIdentically) {
  REQUIRE_GGML();
  for (const SuperType& super : kSuperTypes) {
    check_decode(super.type, random_blocks(super.type, 64, super.fp16_offsets, 30), 64 * kSuper, "random bytes");
  }
  // The blocks of 32 too: every code and high-bit pattern.
  const std::vector<std::pair<GgmlType, std::vector<int>>> small = {
      {GgmlType::Q4_0, {0}}, {GgmlType::Q4_1, {0, 2}}, {GgmlType::Q5_0, {0}},
      {GgmlType::Q5_1, {0, 2}}, {GgmlType::Q8_0, {0}}, {GgmlType::IQ4_NL, {0}}};
  for (const auto& [type, offsets] : small) {
    check_decode(type, random_blocks(type, 256, offsets, 31), 256 * kBlock, "random bytes");
  }
}

// ------------------------------------------------------------------ the type table

TEST(GgmlReferenceTest, TypeTableMatchesGgml) {
  REQUIRE_GGML();
  const auto type_name = ggml().symbol<const char* (*)(int)>("ggml_type_name");
  const auto block_size = ggml().symbol<std::int64_t (*)(int)>("ggml_blck_size");
  const auto type_size = ggml().symbol<std::size_t (*)(int)>("ggml_type_size");
  ASSERT_TRUE(type_name != nullptr && block_size != nullptr && type_size != nullptr);
  // (Ids past the library's GGML_TYPE_COUNT cannot be asked: ggml_blck_size does not check its argument.)
  for (std::uint32_t id = 0; id < kGgmlTypeCount; ++id) {
    const GgmlTypeTraits* traits = ggml_type_traits(id);
    const int ggml_id = static_cast<int>(id);
    if (traits == nullptr) {
      EXPECT_EQ(block_size(ggml_id), 0) << "id " << id << " (" << type_name(ggml_id) << ") is a type in ggml";
      continue;
    }
    EXPECT_STREQ(traits->name, type_name(ggml_id)) << id;
    EXPECT_EQ(traits->block_values, block_size(ggml_id)) << traits->name;
    EXPECT_EQ(traits->block_bytes, static_cast<std::int64_t>(type_size(ggml_id))) << traits->name;
  }
}

}  // namespace
}  // namespace tqlab
