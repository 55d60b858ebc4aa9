// Hand-derived cases for the formats whose definitions come from published specs rather than from
// a reference library: E2M1 rounding, mxfp4 and nvfp4 bytes, and vLLM's per-token-head int8 / fp8.
// (Their generic properties come from the registry loop in registry_test.cpp; mxfp4 and nvfp4
// decoding against ggml's is in ggml_reference_test.cpp.)
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "blocks/e2m1.h"
#include "quant/registry.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::RoundTrip;

RoundTrip run(const std::string& spec, std::int64_t tokens, int dim, const std::vector<float>& x) {
  return testing::round_trip(*make_quantizer(spec), tokens, dim, x, QuantContext{});
}

std::vector<std::uint8_t> float_bytes(float value) {
  std::vector<std::uint8_t> bytes(4);
  std::memcpy(bytes.data(), &value, 4);
  return bytes;
}

TEST(E2m1Test, GridValuesRoundTripExactly) {
  for (int code = 0; code < 16; ++code) {
    const float value = e2m1_value(static_cast<std::uint8_t>(code));
    EXPECT_EQ(e2m1_nearest(value), code) << value;
  }
  EXPECT_EQ(e2m1_value(7), 6.0f);
  EXPECT_EQ(e2m1_value(13), -3.0f);
}

TEST(E2m1Test, TiesGoToTheEvenCodeAndLargeValuesSaturate) {
  // Midpoints between neighbours: the magnitude whose code has mantissa bit 0 wins.
  EXPECT_EQ(e2m1_nearest(0.25f), 0);   // 0 | 0.5 -> 0
  EXPECT_EQ(e2m1_nearest(0.75f), 2);   // 0.5 | 1 -> 1
  EXPECT_EQ(e2m1_nearest(1.25f), 2);   // 1 | 1.5 -> 1
  EXPECT_EQ(e2m1_nearest(1.75f), 4);   // 1.5 | 2 -> 2
  EXPECT_EQ(e2m1_nearest(2.5f), 4);    // 2 | 3 -> 2
  EXPECT_EQ(e2m1_nearest(3.5f), 6);    // 3 | 4 -> 4
  EXPECT_EQ(e2m1_nearest(5.0f), 6);    // 4 | 6 -> 4
  EXPECT_EQ(e2m1_nearest(5.01f), 7);
  EXPECT_EQ(e2m1_nearest(1e30f), 7);   // saturates at 6
  EXPECT_EQ(e2m1_nearest(-7.0f), 15);
  EXPECT_EQ(e2m1_nearest(-0.1f), 8);   // -0 keeps its sign
  EXPECT_EQ(e2m1_nearest(0.26f), 1);
}

TEST(Mxfp4Test, KnownBlockBytes) {
  // x_j = value(j mod 16): max |x| = 6, floor(log2 6) = 2, X = 2^(2-2) = 1 (E8M0 byte 127);
  // codes j mod 16, so byte 1 + j = j | j << 4.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = e2m1_value(static_cast<std::uint8_t>(j % 16));
  const RoundTrip unit = run("mxfp4", 1, 32, x);
  ASSERT_EQ(unit.encoded.bytes.size(), 17u);
  EXPECT_EQ(unit.encoded.bytes[0], 127);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(unit.encoded.bytes[1 + j], 0x11 * j) << j;
  EXPECT_EQ(unit.decoded, x);
  // The same row times 2^-10: only the scale byte changes, to 117.
  std::vector<float> small = x;
  for (float& v : small) v = std::ldexp(v, -10);
  const RoundTrip scaled = run("mxfp4", 1, 32, small);
  EXPECT_EQ(scaled.encoded.bytes[0], 117);
  EXPECT_TRUE(std::equal(scaled.encoded.bytes.begin() + 1, scaled.encoded.bytes.end(), unit.encoded.bytes.begin() + 1));
  EXPECT_EQ(scaled.decoded, small);
}

TEST(Mxfp4Test, ScaleFromTheLargestMagnitudeAndTiesToEven) {
  // max |x| = 4: X = 2^(2-2) = 1. 1.75 and 2.5 are ties that go to 2 (code 4); 7.9 would need
  // X = 2 and is not here, so 4 stays exact.
  std::vector<float> x(32, 0.0f);
  x[0] = 4.0f;
  x[1] = 1.75f;
  x[2] = 2.5f;
  x[3] = -0.75f;
  const RoundTrip result = run("mxfp4", 1, 32, x);
  EXPECT_EQ(result.encoded.bytes[0], 127);
  EXPECT_EQ(result.decoded[1], 2.0f);
  EXPECT_EQ(result.decoded[2], 2.0f);
  EXPECT_EQ(result.decoded[3], -1.0f);
  // max |x| = 7.99: floor(log2) = 2 still, so 7.99 saturates to 6.
  x[0] = 7.99f;
  EXPECT_EQ(run("mxfp4", 1, 32, x).decoded[0], 6.0f);
}

TEST(Nvfp4Test, KnownRowBytes) {
  // One block of 16: x_j = value(j) for j < 8 and -value(j - 8) after. The tensor's max is 6, so
  // S = 6 / (6 * 448) = 1/448 (fp32), the block scale is E4M3(6 / (6 S)) = 448 (0x7E), codes j.
  std::vector<float> x(16);
  for (int j = 0; j < 16; ++j) x[j] = e2m1_value(static_cast<std::uint8_t>(j));
  const RoundTrip result = run("nvfp4", 1, 16, x);
  std::vector<std::uint8_t> expected = float_bytes(6.0f / 2688.0f);
  expected.push_back(0x7E);
  for (int j = 0; j < 8; ++j) expected.push_back(static_cast<std::uint8_t>(j | ((j + 8) << 4)));
  EXPECT_EQ(result.encoded.bytes, expected);
  for (int j = 0; j < 16; ++j) EXPECT_NEAR(result.decoded[j], x[j], 1e-6) << j;
  // A second token with max 3: its block scale is E4M3(3 / (6 S)) = 224 (0x76) under the shared S.
  std::vector<float> two = x;
  for (int j = 0; j < 16; ++j) two.push_back(x[j] / 2.0f);
  const RoundTrip pair = run("nvfp4", 2, 16, two);
  EXPECT_EQ(pair.encoded.bytes[4 + 9], 0x76);
  for (int j = 0; j < 32; ++j) EXPECT_NEAR(pair.decoded[j], two[j], 1e-6) << j;
}

TEST(VectorScaleTest, Int8TruncatesAsVllmsKernelStores) {
  // amax 127 -> scale 1 (fp32 1.0 = 00 00 80 3F); codes truncate toward zero.
  std::vector<float> x(8, 0.0f);
  x[0] = 127.0f;
  x[1] = 63.9f;
  x[2] = -0.99f;
  x[3] = -1.5f;
  const RoundTrip result = run("int8", 1, 8, x);
  const std::vector<std::uint8_t> expected = {0x00, 0x00, 0x80, 0x3F, 127, 63, 0, 0xFF, 0, 0, 0, 0};
  EXPECT_EQ(result.encoded.bytes, expected);
  EXPECT_EQ(result.decoded[3], -1.0f);
  // The scale never falls below 1e-6.
  const RoundTrip tiny = run("int8", 1, 8, std::vector<float>(8, 1e-9f));
  float scale;
  std::memcpy(&scale, tiny.encoded.bytes.data(), 4);
  EXPECT_EQ(scale, 1e-6f);
  EXPECT_EQ(tiny.decoded[0], 0.0f);
}

TEST(VectorScaleTest, Fp8PerVectorScaleRoundsToNearestEven) {
  // amax 448 -> scale 1; 1.0625 is the midpoint of E4M3's 1 and 1.125 and goes to 1 (even).
  std::vector<float> x(4, 0.0f);
  x[0] = -448.0f;
  x[1] = 1.0625f;
  x[2] = 1.0626f;
  const RoundTrip result = run("fp8_e4m3:scale=vector", 1, 4, x);
  const std::vector<std::uint8_t> expected = {0x00, 0x00, 0x80, 0x3F, 0xFE, 0x38, 0x39, 0x00};
  EXPECT_EQ(result.encoded.bytes, expected);
  EXPECT_EQ(result.decoded[2], 1.125f);
  EXPECT_EQ(make_quantizer("fp8_e4m3:scale=tensor")->spec(), "fp8_e4m3");
  EXPECT_EQ(make_quantizer("fp8_e4m3:scale=vector")->spec(), "fp8_e4m3:scale=vector");
}

}  // namespace
}  // namespace tqlab
