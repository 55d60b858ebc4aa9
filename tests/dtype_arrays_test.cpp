// core/dtype_arrays.h: the array conversions give store_element's and
// load_element's bits in every kernel form: every fp16 value, and floats
// chosen where rounding to fp16 is delicate (ties, the subnormal range,
// overflow, NaN payloads) plus a stride over all 2^32 float bit patterns.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/dtype_arrays.h"
#include "core/kernel_set.h"
#include "core/rng.h"

namespace tqlab {
namespace {

// Float bit patterns where float -> fp16 can go wrong: around each rounding
// tie of every binade (normal and subnormal fp16), the overflow threshold,
// zeros, infinities, NaNs with every top payload, and a stride over all.
std::vector<float> delicate_floats() {
  std::vector<std::uint32_t> bits;
  for (std::uint32_t exponent = 0; exponent < 256; ++exponent) {
    for (std::uint32_t mantissa : {0x0u, 0x1u, 0xFFFu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7FF000u, 0x7FFFFFu,
                                   0x400000u, 0x401000u, 0x3FF000u, 0x7FE000u, 0x7FD000u}) {
      for (std::uint32_t sign : {0u, 0x80000000u}) bits.push_back(sign | exponent << 23 | mantissa);
    }
  }
  // Every tie and its neighbours in the fp16 subnormal range (2^-25 .. 2^-14).
  for (std::uint32_t b = 0x33000000u; b < 0x38800000u; b += 0x800u) {
    for (std::uint32_t delta : {0u, 1u, 0x7FFu}) bits.push_back(b + delta);
  }
  for (std::uint32_t b = 0x477FE000u; b <= 0x47800001u; ++b) bits.push_back(b);  // 65504 .. Inf
  for (std::uint32_t payload = 1; payload < 0x800000u; payload = payload * 3 + 1) {
    bits.push_back(0x7F800000u | payload);
    bits.push_back(0xFF800000u | payload);
  }
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 4099) bits.push_back(static_cast<std::uint32_t>(b));
  std::vector<float> values(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) values[i] = std::bit_cast<float>(bits[i]);
  return values;
}

TEST(DTypeArraysTest, FloatsToHalvesMatchFloatToHalfInEveryForm) {
  const std::vector<float> values = delicate_floats();
  std::vector<std::uint16_t> expected(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) expected[i] = float_to_half(values[i]);
  for (KernelSet set : supported_kernel_sets()) {
    ScopedKernelSet use(set);
    // Odd lengths and offsets: the tails of the sixteen-value steps.
    for (std::size_t offset : {std::size_t{0}, std::size_t{5}}) {
      std::vector<std::uint16_t> halves(values.size() - offset, 0xFFFF);
      floats_to_halves(halves.size(), values.data() + offset, halves.data());
      for (std::size_t i = 0; i < halves.size(); ++i) {
        ASSERT_EQ(halves[i], expected[i + offset]) << kernel_set_name(set) << ": float bits 0x" << std::hex
                                                   << std::bit_cast<std::uint32_t>(values[i + offset]);
      }
    }
  }
}

TEST(DTypeArraysTest, HalvesToFloatsMatchHalfToFloatForEveryHalf) {
  std::vector<std::uint16_t> halves(0x10000 + 7);
  for (std::size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<std::uint16_t>(i);
  for (KernelSet set : supported_kernel_sets()) {
    ScopedKernelSet use(set);
    std::vector<float> values(halves.size());
    halves_to_floats(halves.size(), halves.data(), values.data());
    for (std::size_t i = 0; i < halves.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(values[i]), std::bit_cast<std::uint32_t>(half_to_float(halves[i])))
          << kernel_set_name(set) << ": half bits 0x" << std::hex << halves[i];
    }
  }
}

TEST(DTypeArraysTest, StoreAndLoadElementsMatchTheElementWiseFunctions) {
  Rng rng(7);
  std::vector<float> values(203);
  for (float& value : values) value = static_cast<float>(rng.gaussian()) * 3e4f;
  values[17] = std::numeric_limits<float>::infinity();
  values[90] = 1e6f;  // beyond fp16 and fp8; fine in bf16 and fp32
  for (KernelSet set : supported_kernel_sets()) {
    ScopedKernelSet use(set);
    for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::f8_e4m3, DType::f8_e5m2}) {
      for (std::size_t stride : {std::size_t{1}, std::size_t{3}}) {
        const std::size_t size = dtype_size(dtype);
        std::vector<std::uint8_t> expected(values.size() * stride * size, 0xAB), bytes = expected;
        std::size_t expected_first = values.size();
        for (std::size_t i = 0; i < values.size(); ++i) {
          const float stored = store_element(values[i], dtype, expected.data() + i * stride * size);
          if (expected_first == values.size() && !std::isfinite(stored)) expected_first = i;
        }
        // One byte in: the norms section of a tq tensor need not be aligned.
        std::vector<std::uint8_t> shifted(bytes.size() + 1, 0xAB);
        const std::size_t first = store_elements(values.size(), values.data(), dtype, stride, shifted.data() + 1);
        std::memcpy(bytes.data(), shifted.data() + 1, bytes.size());
        const std::string what = std::string(kernel_set_name(set)) + ", " + std::string(dtype_name(dtype)) +
                                 ", stride " + std::to_string(stride);
        EXPECT_EQ(bytes, expected) << what;
        EXPECT_EQ(first, expected_first) << what;
        std::vector<float> loaded(values.size());
        load_elements(values.size(), shifted.data() + 1, dtype, stride, loaded.data());
        for (std::size_t i = 0; i < values.size(); ++i) {
          const float element = load_element(expected.data() + i * stride * size, dtype);
          ASSERT_EQ(std::bit_cast<std::uint32_t>(loaded[i]), std::bit_cast<std::uint32_t>(element))
              << what << " #" << i;
        }
      }
    }
  }
}

TEST(DTypeArraysTest, StoreElementsNamesTheFirstNonFiniteElement) {
  const std::vector<float> values = {1.0f, 65504.0f, 65520.0f, std::nanf(""), 2.0f};
  std::vector<std::uint8_t> bytes(4 * values.size());
  EXPECT_EQ(store_elements(values.size(), values.data(), DType::f16, 1, bytes.data()), 2u);  // 65520 rounds to Inf
  EXPECT_EQ(store_elements(values.size(), values.data(), DType::f32, 1, bytes.data()), 3u);
  EXPECT_EQ(store_elements(2, values.data(), DType::f16, 1, bytes.data()), 2u);
}

}  // namespace
}  // namespace tqlab
