// The ggml type table and the row decoder's contract: ids, names and sizes as ggml.h and ggml.c
// define them (tests/ggml_reference_test.cpp checks every id against libggml-base itself), the
// scalar types decoded exactly, and refusals that name the type.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "blocks/ggml_type.h"
#include "core/dtype.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::input_error_message;

TEST(GgmlTypeTest, TraitsOfKnownIds) {
  const GgmlTypeTraits* q4_k = ggml_type_traits(12);
  ASSERT_NE(q4_k, nullptr);
  EXPECT_STREQ(q4_k->name, "q4_K");
  EXPECT_EQ(q4_k->block_values, 256);
  EXPECT_EQ(q4_k->block_bytes, 144);
  const GgmlTypeTraits* bf16 = ggml_type_traits(static_cast<std::uint32_t>(GgmlType::BF16));
  ASSERT_NE(bf16, nullptr);
  EXPECT_STREQ(bf16->name, "bf16");
  EXPECT_EQ(bf16->block_values, 1);
  EXPECT_EQ(bf16->block_bytes, 2);
  EXPECT_TRUE(bf16->decodable);
  EXPECT_STREQ(ggml_type_traits(GgmlType::NVFP4).name, "nvfp4");
  EXPECT_EQ(ggml_type_traits(GgmlType::NVFP4).block_values, 64);
}

TEST(GgmlTypeTest, RetiredAndUnknownIdsHaveNoTraits) {
  for (const std::uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u}) {
    EXPECT_EQ(ggml_type_traits(id), nullptr) << id;
  }
  int defined = 0;
  for (std::uint32_t id = 0; id < kGgmlTypeCount; ++id) defined += ggml_type_traits(id) != nullptr;
  EXPECT_EQ(defined, 35);
}

TEST(GgmlTypeTest, ScalarTypesDecodeExactly) {
  const std::vector<float> values = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 5.960464477539063e-08f, 1e-3f, 3.0e38f};
  std::vector<float> decoded(values.size());
  dequantize_ggml_row(GgmlType::F32, values.data(), decoded.data(), static_cast<std::int64_t>(values.size()));
  EXPECT_EQ(0, std::memcmp(values.data(), decoded.data(), values.size() * sizeof(float)));

  std::vector<std::uint16_t> halves, bf16s;
  for (const float value : values) {
    halves.push_back(float_to_half(value));
    bf16s.push_back(float_to_bf16(value));
  }
  dequantize_ggml_row(GgmlType::F16, halves.data(), decoded.data(), static_cast<std::int64_t>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(decoded[i], half_to_float(halves[i])) << i;
  EXPECT_EQ(decoded[4], 65504.0f);
  EXPECT_EQ(decoded[5], 5.960464477539063e-08f);  // the smallest fp16 subnormal
  dequantize_ggml_row(GgmlType::BF16, bf16s.data(), decoded.data(), static_cast<std::int64_t>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(decoded[i], bf16_to_float(bf16s[i])) << i;
  EXPECT_EQ(decoded[3], -2.5f);
}

TEST(GgmlTypeTest, RefusalsNameTheType) {
  std::vector<std::uint8_t> bytes(1024);
  std::vector<float> out(256);
  const std::string undecodable =
      input_error_message([&] { dequantize_ggml_row(GgmlType::IQ2_XXS, bytes.data(), out.data(), 256); });
  EXPECT_NE(undecodable.find("iq2_xxs"), std::string::npos) << undecodable;
  EXPECT_NE(undecodable.find("bf16"), std::string::npos) << undecodable;
  const std::string partial =
      input_error_message([&] { dequantize_ggml_row(GgmlType::Q8_0, bytes.data(), out.data(), 33); });
  EXPECT_NE(partial.find("q8_0"), std::string::npos) << partial;
  EXPECT_NE(partial.find("32"), std::string::npos) << partial;
}

}  // namespace
}  // namespace tqlab
