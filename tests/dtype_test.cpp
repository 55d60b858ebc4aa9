// fp16 / bf16 conversions: exhaustive round trips and rounding rules.
#include <bit>
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "core/dtype.h"

namespace tqlab {
namespace {

TEST(DTypeTest, EveryHalfRoundTripsBitExactly) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    const float value = half_to_float(half);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(value))));
      continue;
    }
    ASSERT_EQ(float_to_half(value), half) << "half bits " << bits;
  }
}

TEST(DTypeTest, EveryBf16RoundTripsBitExactly) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto raw = static_cast<std::uint16_t>(bits);
    const float value = bf16_to_float(raw);
    if (std::isnan(value)) continue;
    ASSERT_EQ(float_to_bf16(value), raw) << "bf16 bits " << bits;
  }
}

TEST(DTypeTest, HalfKnownValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // rounds to Inf
  EXPECT_EQ(float_to_half(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(1e-9f), 0x0000);
  EXPECT_FLOAT_EQ(half_to_float(0x3555), 0.33325195f);
}

TEST(DTypeTest, HalfRoundsTiesToEven) {
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties go to even (1).
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3*2^-11 lies halfway between 1+2^-10 (odd) and 1+2^-9 (even).
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Against the hardware-independent definition: nearest representable value.
  for (float value : {0.1f, 3.14159f, -1234.567f, 1e-5f, 6.1e-5f, 0.33333334f}) {
    const float back = half_to_float(float_to_half(value));
    const float up = half_to_float(static_cast<std::uint16_t>(float_to_half(value) + 1));
    const float down = half_to_float(static_cast<std::uint16_t>(float_to_half(value) - 1));
    EXPECT_LE(std::fabs(back - value), std::fabs(up - value)) << value;
    EXPECT_LE(std::fabs(back - value), std::fabs(down - value)) << value;
  }
}

TEST(DTypeTest, Bf16RoundsTiesToEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(DTypeTest, ParseNames) {
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("f32"), DType::f32);
  EXPECT_FALSE(parse_dtype("int8").has_value());
}

}  // namespace
}  // namespace tqlab
