// fp16 / bf16 conversions: exhaustive round trips and rounding rules; the dtype table.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"

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

// The safetensors format's list of dtypes (its README), each once, with its size; and our
// own short names, each once.
TEST(DTypeTest, TableCoversEverySafetensorsDtype) {
  const std::pair<std::string_view, std::size_t> codes[] = {
      {"BOOL", 1}, {"U8", 1},      {"I8", 1},      {"U16", 2}, {"I16", 2},  {"U32", 4}, {"I32", 4}, {"U64", 8},
      {"I64", 8},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F16", 2}, {"BF16", 2}, {"F32", 4}, {"F64", 8}};
  for (const auto& [code, size] : codes) {
    const auto dtype = dtype_from_safetensors(code);
    ASSERT_TRUE(dtype.has_value()) << code;
    EXPECT_EQ(dtype_info(*dtype).safetensors, code);
    EXPECT_EQ(dtype_size(*dtype), size) << code;
  }
  EXPECT_FALSE(dtype_from_safetensors("raw16").has_value());
  EXPECT_FALSE(dtype_from_safetensors("f16").has_value());
  std::set<std::string_view> names;
  for (const DTypeInfo& info : all_dtypes()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(dtype_name(info.dtype), info.name);
  }
  EXPECT_EQ(names.size(), 16u);
  EXPECT_EQ(float_dtype_names(), "f8_e4m3, f8_e5m2, f16, bf16, f32, f64");
  EXPECT_EQ(safetensors_codes(), "BOOL, U8, I8, U16, I16, U32, I32, U64, I64, F8_E4M3, F8_E5M2, F16, BF16, F32, F64");
}

TEST(DTypeTest, KindsSayWhatAQuantizerMayTake) {
  for (DType dtype : {DType::f8_e4m3, DType::f8_e5m2, DType::f16, DType::bf16, DType::f32, DType::f64}) {
    EXPECT_TRUE(dtype_is_float(dtype)) << dtype_name(dtype);
    EXPECT_FALSE(dtype_is_integer(dtype)) << dtype_name(dtype);
  }
  for (DType dtype : {DType::boolean, DType::u8, DType::i8, DType::u16, DType::i16, DType::u32, DType::i32,
                      DType::u64, DType::i64}) {
    EXPECT_FALSE(dtype_is_float(dtype)) << dtype_name(dtype);
    EXPECT_TRUE(dtype_is_integer(dtype)) << dtype_name(dtype);
  }
  EXPECT_FALSE(dtype_is_float(DType::raw16));
  EXPECT_FALSE(dtype_is_integer(DType::raw16));
}

// fp8 elements load exactly and store with fp8.h's rounding and saturation.
TEST(DTypeTest, Fp8ElementsLoadAndStore) {
  for (int code = 0; code < 256; ++code) {
    const auto byte = static_cast<std::uint8_t>(code);
    const float e4m3 = load_element(&byte, DType::f8_e4m3);
    const float e5m2 = load_element(&byte, DType::f8_e5m2);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(e4m3), std::bit_cast<std::uint32_t>(fp8_to_float(byte, Fp8Format::e4m3fn)));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(e5m2), std::bit_cast<std::uint32_t>(fp8_to_float(byte, Fp8Format::e5m2)));
  }
  std::uint8_t out = 0;
  EXPECT_EQ(store_element(1.0f, DType::f8_e4m3, &out), 1.0f);
  EXPECT_EQ(out, 0x38);
  EXPECT_EQ(store_element(1000.0f, DType::f8_e4m3, &out), 448.0f);  // saturates
  EXPECT_EQ(out, 0x7E);
  EXPECT_EQ(store_element(-1.0f, DType::f8_e5m2, &out), -1.0f);
  EXPECT_EQ(out, 0xBC);
}

// Integers and bools read as float (rounded to 24 bits); a quantizer never stores into them.
TEST(DTypeTest, IntegerElementsLoadAsFloatAndAreNeverStored) {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  unsigned char bytes[8];
  std::memcpy(bytes, &big, 8);
  EXPECT_EQ(load_element(bytes, DType::i64), 9007199254740992.0f);
  const std::int16_t minus = -300;
  std::memcpy(bytes, &minus, 2);
  EXPECT_EQ(load_element(bytes, DType::i16), -300.0f);
  EXPECT_EQ(load_element(bytes, DType::u16), static_cast<float>(65536 - 300));
  bytes[0] = 7;
  EXPECT_EQ(load_element(bytes, DType::boolean), 1.0f);  // any non-zero byte is true
  EXPECT_THROW(store_element(1.0f, DType::i32, bytes), InternalError);
  EXPECT_THROW(store_element(1.0f, DType::boolean, bytes), InternalError);
}

TEST(DTypeTest, ParseNames) {
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("f32"), DType::f32);
  EXPECT_FALSE(parse_dtype("int8").has_value());
  EXPECT_FALSE(parse_dtype("i64").has_value());  // parse_dtype names stored float types only
}

}  // namespace
}  // namespace tqlab
