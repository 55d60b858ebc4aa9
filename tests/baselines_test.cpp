// Baseline quantizers: fp32/fp16/bf16, fp8 (e4m3fn, e5m2), llama.cpp blocks
// (q8_0, q4_0, q4_1) and KIVI. Pins the fp8 conversions exhaustively, the
// bits per value against hand counts, per-value error bounds, hand-worked
// golden blocks, KIVI's per-channel keys, spec canonicalization and errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/fp8.h"
#include "quant/block_quantizer.h"
#include "quant/kivi_quantizer.h"
#include "quant/registry.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::input_error_message;
using testing::RoundTrip;

// ---------------------------------------------------------------- helpers

// N(0, 1) samples by Box-Muller over std::mt19937, so the test data is the
// same with every standard library (std::normal_distribution is not).
class GaussianSource {
 public:
  explicit GaussianSource(std::uint32_t seed) : engine_(seed) {}
  float next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(engine_()) + 0.5) / 4294967296.0;  // (0, 1)
    const double u2 = (static_cast<double>(engine_()) + 0.5) / 4294967296.0;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * 3.14159265358979323846 * u2;
    spare_ = static_cast<float>(radius * std::sin(angle));
    has_spare_ = true;
    return static_cast<float>(radius * std::cos(angle));
  }

 private:
  std::mt19937 engine_;
  bool has_spare_ = false;
  float spare_ = 0.0f;
};

// tokens * dim i.i.d. N(0, sigma^2) values, row-major.
std::vector<float> gaussian_tensor(std::int64_t tokens, int dim, std::uint32_t seed, float sigma = 1.0f) {
  GaussianSource source(seed);
  std::vector<float> x(static_cast<std::size_t>(tokens * dim));
  for (float& value : x) value = sigma * source.next();
  return x;
}

// Gaussian keys with one outlier channel: channel `channel` carries `offset`
// plus noise, like the large fixed-sign channels of real keys.
std::vector<float> outlier_keys(std::int64_t tokens, int dim, int channel, float offset, std::uint32_t seed) {
  std::vector<float> x = gaussian_tensor(tokens, dim, seed);
  for (std::int64_t t = 0; t < tokens; ++t) x[static_cast<std::size_t>(t * dim + channel)] += offset;
  return x;
}

QuantContext context_for(Role role) {
  QuantContext context;
  context.seed = 7;
  context.role = role;
  context.layer = 2;
  context.kv_head = 1;
  return context;
}

RoundTrip round_trip(const std::string& spec, std::int64_t tokens, int dim, const std::vector<float>& x,
                     Role role = Role::key) {
  return testing::round_trip(*make_quantizer(spec), tokens, dim, x, context_for(role));
}

double mean_squared_error(const std::vector<float>& x, const std::vector<float>& y) {
  double sum = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += (static_cast<double>(x[i]) - y[i]) * (x[i] - y[i]);
  return sum / static_cast<double>(x.size());
}


// The methods this file owns (the registry also holds tq, tested elsewhere).
// Properties every method shares (zero in, zero out; determinism; decoding
// from the bytes alone; NaN and truncated bytes rejected; canonical specs)
// are tested for the whole registry in registry_test.cpp.
const std::vector<std::string> kBaselineMethods = {"fp16", "bf16", "fp32", "fp8_e4m3", "fp8_e5m2",
                                                   "q8_0", "q4_0", "q4_1", "kivi"};

// ---------------------------------------------------------------- fp8 conversions

const Fp8Format kFp8Formats[] = {Fp8Format::e4m3fn, Fp8Format::e5m2};

TEST(Fp8Conversion, EveryCodeRoundTripsThroughFloat) {
  for (Fp8Format format : kFp8Formats) {
    int nan_codes = 0;
    int infinite_codes = 0;
    for (int code = 0; code < 256; ++code) {
      const auto bits = static_cast<std::uint8_t>(code);
      const float value = fp8_to_float(bits, format);
      if (std::isnan(value)) {
        ++nan_codes;
        EXPECT_TRUE(std::isnan(fp8_to_float(float_to_fp8(value, format), format)));
      } else if (std::isinf(value)) {
        ++infinite_codes;  // saturating conversion: Inf becomes the largest finite value
        EXPECT_EQ(float_to_fp8(value, format), value > 0 ? 0x7B : 0xFB);
      } else {
        ASSERT_EQ(float_to_fp8(value, format), bits) << fp8_format_name(format) << " code " << code;
        ASSERT_EQ(float_to_fp8_reference(value, format), bits) << fp8_format_name(format) << " code " << code;
      }
    }
    // e4m3fn: only S.1111.111 is NaN, no Inf; e5m2: S.11111.{01,10,11} NaN, S.11111.00 Inf.
    EXPECT_EQ(nan_codes, format == Fp8Format::e4m3fn ? 2 : 6) << fp8_format_name(format);
    EXPECT_EQ(infinite_codes, format == Fp8Format::e4m3fn ? 0 : 2) << fp8_format_name(format);
  }
}

TEST(Fp8Conversion, HandValues) {
  const Fp8Format e4m3 = Fp8Format::e4m3fn;
  const Fp8Format e5m2 = Fp8Format::e5m2;
  EXPECT_EQ(fp8_max(e4m3), 448.0f);
  EXPECT_EQ(fp8_max(e5m2), 57344.0f);
  EXPECT_EQ(fp8_min_normal(e4m3), std::ldexp(1.0f, -6));
  EXPECT_EQ(fp8_min_normal(e5m2), std::ldexp(1.0f, -14));
  // e4m3fn: 1.0 = 0.0111.000, -2 = 1.1000.000, 448 = 0.1111.110, 0.1111.111 = NaN
  EXPECT_EQ(float_to_fp8(1.0f, e4m3), 0x38);
  EXPECT_EQ(float_to_fp8(-2.0f, e4m3), 0xC0);
  EXPECT_EQ(float_to_fp8(448.0f, e4m3), 0x7E);
  EXPECT_EQ(fp8_to_float(0x7E, e4m3), 448.0f);
  EXPECT_TRUE(std::isnan(fp8_to_float(0x7F, e4m3)));
  EXPECT_EQ(fp8_to_float(0x01, e4m3), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_EQ(fp8_to_float(0x07, e4m3), 7 * std::ldexp(1.0f, -9));  // largest subnormal
  EXPECT_EQ(fp8_to_float(0x08, e4m3), std::ldexp(1.0f, -6));   // smallest normal
  EXPECT_EQ(float_to_fp8(0.3f, e4m3), 0x2A);  // 0.3 / 2^-2 = 1.2 -> 1.25 = 1.010
  EXPECT_EQ(float_to_fp8(-0.0f, e4m3), 0x80);
  // e5m2: 1.0 = 0.01111.00, 57344 = 0.11110.11, 0.11111.00 = Inf
  EXPECT_EQ(float_to_fp8(1.0f, e5m2), 0x3C);
  EXPECT_EQ(float_to_fp8(57344.0f, e5m2), 0x7B);
  EXPECT_EQ(fp8_to_float(0x7C, e5m2), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp8_to_float(0x01, e5m2), std::ldexp(1.0f, -16));
  EXPECT_EQ(float_to_fp8(0.3f, e5m2), 0x35);  // 1.2 * 2^-2 -> 1.25 = 1.01, exponent 13
  // Saturation instead of Inf.
  EXPECT_EQ(float_to_fp8(1000.0f, e4m3), 0x7E);
  EXPECT_EQ(float_to_fp8(-1e30f, e4m3), 0xFE);
  EXPECT_EQ(float_to_fp8(1e6f, e5m2), 0x7B);
  EXPECT_EQ(float_to_fp8(465.0f, e4m3), 0x7E);
}

TEST(Fp8Conversion, TiesRoundToEven) {
  const Fp8Format e4m3 = Fp8Format::e4m3fn;
  const Fp8Format e5m2 = Fp8Format::e5m2;
  EXPECT_EQ(float_to_fp8(1.0625f, e4m3), 0x38);  // between 1 (.000) and 1.125 (.001): even
  EXPECT_EQ(float_to_fp8(1.1875f, e4m3), 0x3A);  // between 1.125 (.001) and 1.25 (.010): even
  EXPECT_EQ(float_to_fp8(1.9375f, e4m3), 0x40);  // between 1.875 and 2: even carries into the exponent
  EXPECT_EQ(float_to_fp8(std::ldexp(1.0f, -10), e4m3), 0x00);      // half the smallest subnormal
  EXPECT_EQ(float_to_fp8(3 * std::ldexp(1.0f, -10), e4m3), 0x02);  // between subnormals 1 and 2
  EXPECT_EQ(float_to_fp8(1.125f, e5m2), 0x3C);   // between 1 (.00) and 1.25 (.01)
  EXPECT_EQ(float_to_fp8(1.375f, e5m2), 0x3E);   // between 1.25 (.01) and 1.5 (.10)
  EXPECT_EQ(float_to_fp8(-1.375f, e5m2), 0xBE);
  // A hair above a tie goes up.
  EXPECT_EQ(float_to_fp8(std::nextafter(1.0625f, 2.0f), e4m3), 0x39);
}

TEST(Fp8Conversion, MatchesNearestValueSearch) {
  for (Fp8Format format : kFp8Formats) {
    std::vector<float> probes;
    // Every midpoint between neighbouring finite codes and its float neighbours.
    for (int code = 0; code < 0x7F; ++code) {
      const float low = fp8_to_float(static_cast<std::uint8_t>(code), format);
      const float high = fp8_to_float(static_cast<std::uint8_t>(code + 1), format);
      if (!std::isfinite(low) || !std::isfinite(high)) continue;
      const float middle = 0.5f * (low + high);
      probes.insert(probes.end(), {middle, std::nextafter(middle, 0.0f), std::nextafter(middle, 1e9f), -middle});
    }
    // And log-uniform values across (and beyond) the range.
    std::mt19937 engine(11);
    std::uniform_real_distribution<float> exponent(-20.0f, 18.0f);
    for (int i = 0; i < 20000; ++i) {
      const float value = std::exp2(exponent(engine));
      probes.push_back((i & 1) ? value : -value);
    }
    for (float value : probes) {
      ASSERT_EQ(float_to_fp8(value, format), float_to_fp8_reference(value, format))
          << fp8_format_name(format) << " value " << value;
    }
  }
}

// ---------------------------------------------------------------- bits per value

struct BitsCase {
  std::string spec;
  std::int64_t tokens;
  int dim;
  Role role;
  double bits;
};

TEST(BaselineBits, BytesGiveHandCountedBitsPerValue) {
  const std::vector<BitsCase> cases = {
      {"fp16", 64, 128, Role::key, 16.0},
      {"bf16", 64, 128, Role::value, 16.0},
      {"fp32", 5, 8, Role::key, 32.0},
      {"fp8_e4m3", 64, 128, Role::key, 8.0 + 32.0 / (64 * 128)},
      {"fp8_e5m2", 3, 8, Role::value, 8.0 + 32.0 / 24},
      {"q8_0", 64, 128, Role::key, 8.5},
      {"q4_0", 64, 128, Role::key, 4.5},
      {"q4_1", 64, 96, Role::value, 5.0},
      {"kivi:b=2", 64, 128, Role::key, 3.0},
      {"kivi:b=2", 64, 128, Role::value, 3.0},
      {"kivi:b=3,group=16", 64, 128, Role::key, 5.0},
      {"kivi:b=4,group=64", 128, 64, Role::value, 4.5},
      // Partial key group: 40 tokens -> token groups of 32 and 8, each 128 channels x 4 bytes,
      // plus 40*128*2 bits of codes: (2*128*4 + 1280) * 8 / 5120.
      {"kivi:b=2", 40, 128, Role::key, (2 * 128 * 4 + 1280) * 8.0 / 5120},
      // Partial value group: 40 channels -> groups of 32 and 8 per token.
      {"kivi:b=2", 64, 40, Role::value, (64 * 2 * 4 + 640) * 8.0 / 2560},
      // Codes crossing bytes with padding: 15 codes of 3 bits = 45 bits -> 6 bytes, + 5 groups x 4 bytes.
      {"kivi:b=3", 3, 5, Role::key, (5 * 4 + 6) * 8.0 / 15},
  };
  for (const BitsCase& test : cases) {
    const std::vector<float> x = gaussian_tensor(test.tokens, test.dim, 3);
    const RoundTrip result = round_trip(test.spec, test.tokens, test.dim, x, test.role);
    EXPECT_DOUBLE_EQ(result.encoded.bits_per_value(), test.bits) << test.spec << " " << role_name(test.role);
  }
}

// ---------------------------------------------------------------- error bounds

TEST(FloatStorage, DecodesToTheRoundedValue) {
  const std::vector<float> x = gaussian_tensor(16, 64, 5, 30.0f);
  const RoundTrip fp16 = round_trip("fp16", 16, 64, x);
  const RoundTrip bf16 = round_trip("bf16", 16, 64, x);
  const RoundTrip fp32 = round_trip("fp32", 16, 64, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(fp16.decoded[i], half_to_float(float_to_half(x[i])));
    ASSERT_EQ(bf16.decoded[i], bf16_to_float(float_to_bf16(x[i])));
    ASSERT_EQ(fp32.decoded[i], x[i]);
  }
}

TEST(Fp8Quantizer, RelativeErrorWithinHalfAnUlpForNormalValues) {
  // Relative rounding error of a p-bit significand: 2^-p (e4m3: 3+1 bits -> 2^-4, e5m2: 2^-3).
  struct Case {
    std::string spec;
    Fp8Format format;
    double relative_bound;
  };
  const Case cases[] = {{"fp8_e4m3", Fp8Format::e4m3fn, 1.0 / 16}, {"fp8_e5m2", Fp8Format::e5m2, 1.0 / 8}};
  const std::int64_t tokens = 64;
  const int dim = 128;
  std::vector<float> x = outlier_keys(tokens, dim, 9, 50.0f, 17);
  for (const Case& test : cases) {
    const RoundTrip result = round_trip(test.spec, tokens, dim, x);
    float scale;
    std::memcpy(&scale, result.encoded.bytes.data(), sizeof(float));
    float amax = 0.0f;
    for (float value : x) amax = std::max(amax, std::fabs(value));
    EXPECT_FLOAT_EQ(scale, amax / fp8_max(test.format)) << test.spec;
    int normal_values = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double error = std::fabs(static_cast<double>(result.decoded[i]) - x[i]);
      if (std::fabs(x[i]) / scale >= fp8_min_normal(test.format)) {
        ++normal_values;
        ASSERT_LE(error, test.relative_bound * std::fabs(x[i]) * (1 + 1e-6)) << test.spec << " value " << x[i];
      } else {  // subnormal range: half the fixed quantum
        const double quantum = fp8_to_float(0x01, test.format) * static_cast<double>(scale);
        ASSERT_LE(error, 0.5 * quantum * (1 + 1e-6)) << test.spec << " value " << x[i];
      }
    }
    EXPECT_GT(normal_values, static_cast<int>(x.size()) * 9 / 10) << test.spec;
  }
}

// One block's worth of bound checks for the block formats. `d_exact` is the
// fp32 scale llama.cpp computes codes with; the stored fp16 scale differs
// from it by up to 2^-11 relative, which each decoded code multiplies.
TEST(BlockQuantizers, ErrorWithinHalfAStepPlusScaleRounding) {
  const std::int64_t tokens = 32;
  const int dim = 128;
  const std::vector<float> x = outlier_keys(tokens, dim, 40, 12.0f, 23);
  const RoundTrip q8 = round_trip("q8_0", tokens, dim, x);
  const RoundTrip q40 = round_trip("q4_0", tokens, dim, x);
  const RoundTrip q41 = round_trip("q4_1", tokens, dim, x);
  int clamped = 0;
  for (std::int64_t b = 0; b < tokens * dim / kQuantBlockSize; ++b) {
    const float* block_x = x.data() + b * kQuantBlockSize;
    float amax = 0.0f, extreme = 0.0f, min = block_x[0], max = block_x[0];
    for (int j = 0; j < kQuantBlockSize; ++j) {
      if (std::fabs(block_x[j]) > amax) {
        amax = std::fabs(block_x[j]);
        extreme = block_x[j];
      }
      min = std::min(min, block_x[j]);
      max = std::max(max, block_x[j]);
    }
    BlockQ8_0 block8;
    BlockQ4_0 block40;
    BlockQ4_1 block41;
    std::memcpy(&block8, q8.encoded.bytes.data() + b * sizeof(BlockQ8_0), sizeof(BlockQ8_0));
    std::memcpy(&block40, q40.encoded.bytes.data() + b * sizeof(BlockQ4_0), sizeof(BlockQ4_0));
    std::memcpy(&block41, q41.encoded.bytes.data() + b * sizeof(BlockQ4_1), sizeof(BlockQ4_1));
    const double d8 = amax / 127.0, d8_stored = half_to_float(block8.scale_fp16);
    const double d40 = extreme / -8.0, d40_stored = half_to_float(block40.scale_fp16);
    const double d41 = (max - min) / 15.0, d41_stored = half_to_float(block41.scale_fp16);
    const double min_stored = half_to_float(block41.min_fp16);
    for (int j = 0; j < kQuantBlockSize; ++j) {
      const std::size_t i = static_cast<std::size_t>(b * kQuantBlockSize + j);
      const double value = x[i];
      const double slack = 1e-6 * (std::fabs(value) + amax);
      // q8_0: |x - q*d| <= d/2, and q*(d - d_stored) from the fp16 scale.
      const double code8 = block8.codes[j];
      EXPECT_LE(std::fabs(value - q8.decoded[i]), d8 / 2 + std::fabs(code8 * (d8 - d8_stored)) + slack);
      // q4_0: codes 0..15 stand for -8..7 steps of d (d's sign is the extreme's, flipped);
      // values beyond 7.5 steps on the far side are clamped to 7 steps.
      const double steps40 = q40.decoded[i] / d40_stored;
      const double rounding40 = std::fabs(steps40 * (d40 - d40_stored));
      if (value / d40 >= 7.5) {
        ++clamped;
        EXPECT_LE(std::fabs(value - q40.decoded[i]), std::fabs(d40) + rounding40 + slack);
      } else {
        EXPECT_LE(std::fabs(value - q40.decoded[i]), std::fabs(d40) / 2 + rounding40 + slack);
      }
      // q4_1: |x - (q*d + min)| <= d/2, plus the fp16 roundings of d and min.
      const double code41 = (q41.decoded[i] - min_stored) / d41_stored;
      EXPECT_LE(std::fabs(value - q41.decoded[i]),
                d41 / 2 + std::fabs(code41 * (d41 - d41_stored)) + std::fabs(min - min_stored) + slack);
    }
  }
  EXPECT_GT(clamped, 0) << "the data should exercise q4_0's clamped top";
}

TEST(KiviQuantizer, ErrorWithinHalfAStepForEveryValue) {
  // Partial groups on both axes: 70 tokens and 40 channels with groups of 32.
  const std::int64_t tokens = 70;
  const int dim = 40;
  const std::vector<float> x = outlier_keys(tokens, dim, 3, 20.0f, 29);
  for (Role role : {Role::key, Role::value}) {
    for (int bits = 1; bits <= 8; ++bits) {
      const std::string spec = "kivi:b=" + std::to_string(bits);
      const RoundTrip result = round_trip(spec, tokens, dim, x, role);
      const int groups_per_row = role == Role::key ? dim : (dim + 31) / 32;
      for (std::int64_t t = 0; t < tokens; ++t) {
        for (int c = 0; c < dim; ++c) {
          // Group index by the documented layout: keys (t/32, c), values (t, c/32).
          const std::int64_t group = role == Role::key ? (t / 32) * groups_per_row + c : t * groups_per_row + c / 32;
          std::uint16_t scale_bits, zero_bits;
          std::memcpy(&scale_bits, result.encoded.bytes.data() + group * 4, 2);
          std::memcpy(&zero_bits, result.encoded.bytes.data() + group * 4 + 2, 2);
          const double scale = half_to_float(scale_bits);
          const double zero = half_to_float(zero_bits);
          const std::size_t i = static_cast<std::size_t>(t * dim + c);
          const double slack = 1e-6 * (std::fabs(x[i]) + std::fabs(zero) + scale);
          ASSERT_LE(std::fabs(x[i] - result.decoded[i]), scale / 2 + slack)
              << spec << " " << role_name(role) << " token " << t << " channel " << c;
        }
      }
    }
  }
}

TEST(KiviQuantizer, ErrorWithinHalfAStepWhenOffsetsDominate) {
  // Groups far from zero with a small spread (like a fixed-sign outlier
  // channel): fp16's step at the offset dwarfs the quantization step, so a
  // zero rounded to nearest (above the minimum) or a scale rounded down (in
  // fp16's subnormal range) would clamp values by far more than scale/2.
  const std::int64_t tokens = 64;
  const int dim = 32;
  for (const auto& [offset, spread] : {std::pair{100.0f, 0.01f}, std::pair{1.0f, 1e-5f}, std::pair{-3.0f, 1e-4f}}) {
    std::vector<float> x = gaussian_tensor(tokens, dim, 53, spread);
    for (float& value : x) value += offset;
    for (int bits : {1, 4, 8}) {
      const std::string spec = "kivi:b=" + std::to_string(bits);
      const RoundTrip result = round_trip(spec, tokens, dim, x, Role::key);
      for (std::int64_t t = 0; t < tokens; ++t) {
        for (int c = 0; c < dim; ++c) {
          const std::int64_t group = (t / 32) * dim + c;
          std::uint16_t scale_bits;
          std::memcpy(&scale_bits, result.encoded.bytes.data() + group * 4, 2);
          const double scale = half_to_float(scale_bits);
          const std::size_t i = static_cast<std::size_t>(t * dim + c);
          ASSERT_LE(std::fabs(x[i] - result.decoded[i]), scale / 2 + 1e-6 * (std::fabs(offset) + scale))
              << spec << " offset " << offset << " token " << t << " channel " << c;
        }
      }
    }
  }
}

TEST(KiviQuantizer, MseFallsAsBitsRise) {
  const std::int64_t tokens = 128;
  const int dim = 64;
  const std::vector<float> x = gaussian_tensor(tokens, dim, 31);
  for (Role role : {Role::key, Role::value}) {
    double previous = std::numeric_limits<double>::infinity();
    for (int bits = 1; bits <= 8; ++bits) {
      const std::string spec = "kivi:b=" + std::to_string(bits);
      const double mse = mean_squared_error(x, round_trip(spec, tokens, dim, x, role).decoded);
      // One more bit halves the step: the error should fall by about 4x, surely by 2x.
      EXPECT_LT(mse, 0.5 * previous) << spec << " " << role_name(role);
      previous = mse;
    }
  }
}

TEST(KiviQuantizer, KeysAreGroupedPerChannelValuesPerToken) {
  // Channel c holds the constant c - 16 (exact in fp16) in every token: each
  // key group (one channel) is constant and decodes exactly; each value group
  // (32 channels of one token) spans 31 and does not.
  const std::int64_t tokens = 64;
  const int dim = 32;
  std::vector<float> x(static_cast<std::size_t>(tokens * dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int c = 0; c < dim; ++c) x[static_cast<std::size_t>(t * dim + c)] = static_cast<float>(c - 16);
  }
  EXPECT_EQ(round_trip("kivi:b=2", tokens, dim, x, Role::key).decoded, x);
  EXPECT_GT(mean_squared_error(x, round_trip("kivi:b=2", tokens, dim, x, Role::value).decoded), 1.0);
  // Queries are grouped like values.
  EXPECT_GT(mean_squared_error(x, round_trip("kivi:b=2", tokens, dim, x, Role::query).decoded), 1.0);
}

TEST(KiviQuantizer, OutlierChannelHurtsKiviKeysFarLessThanQ4_0) {
  // The point of KIVI's per-channel keys: an outlier channel only widens its
  // own groups, while in q4_0 (and in per-token groups) it sets the step of
  // every value sharing its block.
  const std::int64_t tokens = 256;
  const int dim = 128;
  const std::vector<float> x = outlier_keys(tokens, dim, 5, 40.0f, 37);
  const double kivi_keys = mean_squared_error(x, round_trip("kivi:b=4", tokens, dim, x, Role::key).decoded);
  const double kivi_per_token = mean_squared_error(x, round_trip("kivi:b=4", tokens, dim, x, Role::value).decoded);
  const double q4_0 = mean_squared_error(x, round_trip("q4_0", tokens, dim, x).decoded);
  EXPECT_LT(kivi_keys, 0.1 * q4_0);
  EXPECT_LT(kivi_keys, 0.2 * kivi_per_token);
  // Without the outlier the two are on a par (within 3x).
  const std::vector<float> plain = gaussian_tensor(tokens, dim, 37);
  const double plain_kivi = mean_squared_error(plain, round_trip("kivi:b=4", tokens, dim, plain).decoded);
  const double plain_q4_0 = mean_squared_error(plain, round_trip("q4_0", tokens, dim, plain).decoded);
  EXPECT_LT(plain_kivi, 3 * plain_q4_0);
  EXPECT_LT(plain_q4_0, 3 * plain_kivi);
}

TEST(KiviQuantizer, ConstantGroupsDecodeExactly) {
  const std::int64_t tokens = 40;  // a full and a partial token group
  const int dim = 8;
  for (float constant : {0.0f, 0.75f, -3.5f, 1000.0f, -6.1035156e-05f}) {
    const std::vector<float> x(static_cast<std::size_t>(tokens * dim), constant);
    for (Role role : {Role::key, Role::value}) {
      EXPECT_EQ(round_trip("kivi:b=3", tokens, dim, x, role).decoded, x) << constant;
    }
  }
}

// ---------------------------------------------------------------- golden blocks

std::vector<std::uint8_t> bytes_of(std::initializer_list<int> values) {
  std::vector<std::uint8_t> bytes;
  for (int value : values) bytes.push_back(static_cast<std::uint8_t>(value));
  return bytes;
}

// KIVI's layout written by hand (kivi_quantizer.h): per group an fp16 scale
// and zero, then every code LSB-first in one row-major stream. Values are
// grouped per token (group = 4 = dim): token 0 = (0, 1, 2, 7) has zero 0 and
// scale 7/7 = 1 (fp16 0x3C00), codes 0 1 2 7; token 1 = (4, 11, 5, 6) has zero
// 4 (0x4400), scale 1, codes 0 7 1 2. 3-bit codes 0 1 2 7 0 7 1 2 from bit 0:
// 0x88 0x8E 0x47 (the stream crosses byte boundaries). Both roles decode exactly.
TEST(KiviQuantizer, HandWrittenLayout) {
  const std::vector<float> x = {0, 1, 2, 7, 4, 11, 5, 6};
  const RoundTrip result = round_trip("kivi:b=3,group=4", 2, 4, x, Role::value);
  EXPECT_EQ(result.encoded.bytes, bytes_of({0x00, 0x3C, 0x00, 0x00, 0x00, 0x3C, 0x00, 0x44, 0x88, 0x8E, 0x47}));
  EXPECT_EQ(result.decoded, x);
  // 2-bit codes 0 1 2 3 of (0, 1, 2, 3): one byte 0b11'10'01'00.
  const RoundTrip two = round_trip("kivi:b=2,group=4", 1, 4, {0, 1, 2, 3}, Role::value);
  EXPECT_EQ(two.encoded.bytes, bytes_of({0x00, 0x3C, 0x00, 0x00, 0xE4}));
}

TEST(BlockQuantizers, Q4_0GoldenBlocks) {
  // Token 0: x_j = (j - 16)/4 for j < 31, x_31 = 4. The largest |x| is 4 at
  // j = 0 (-4) and j = 31 (+4); the first wins, so m = -4, d = m/-8 = 0.5 and
  // x/d + 8.5 = j/2 + 0.5 -> q_j = floor((j + 1)/2) (x/d = -7.5 rounds up to
  // -7), and x_31: 8 + 8.5 = 16.5 -> 16 clamped to 15.
  // Token 1 is -x: m = +4, d = -0.5, the same codes, fp16 d = 0xB800.
  // Byte j = q_j | q_{j+16} << 4: q = 0,1,1,2,2,...,7,7,8 | 8,9,9,...,15,15,15.
  std::vector<float> x(64);
  for (int j = 0; j < 31; ++j) x[j] = (j - 16) / 4.0f;
  x[31] = 4.0f;
  for (int j = 0; j < 32; ++j) x[32 + j] = -x[j];
  const RoundTrip result = round_trip("q4_0", 2, 32, x);
  const auto nibbles = {0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3, 0xC4,
                        0xC4, 0xD5, 0xD5, 0xE6, 0xE6, 0xF7, 0xF7, 0xF8};
  std::vector<std::uint8_t> expected = bytes_of({0x00, 0x38});
  expected.insert(expected.end(), nibbles.begin(), nibbles.end());
  const std::vector<std::uint8_t> second = bytes_of({0x00, 0xB8});
  expected.insert(expected.end(), second.begin(), second.end());
  expected.insert(expected.end(), nibbles.begin(), nibbles.end());
  EXPECT_EQ(result.encoded.bytes, expected);
  // Decoded: (q - 8) * d; the clamped x_31 = 4 comes back as 3.5.
  EXPECT_EQ(result.decoded[0], -4.0f);
  EXPECT_EQ(result.decoded[1], -3.5f);
  EXPECT_EQ(result.decoded[2], -3.5f);
  EXPECT_EQ(result.decoded[31], 3.5f);
  EXPECT_EQ(result.decoded[32], 4.0f);
}

TEST(BlockQuantizers, Q4_1GoldenBlock) {
  // x_j = j/2 - 1 for j < 30, x_30 = x_31 = 14: min -1 (fp16 0xBC00), max 14,
  // d = 15/15 = 1 (0x3C00); q = min(15, trunc(x + 1 + 0.5)) = floor((j + 1)/2), 15, 15.
  std::vector<float> x(32);
  for (int j = 0; j < 30; ++j) x[j] = j / 2.0f - 1.0f;
  x[30] = x[31] = 14.0f;
  const RoundTrip result = round_trip("q4_1", 1, 32, x);
  EXPECT_EQ(result.encoded.bytes, bytes_of({0x00, 0x3C, 0x00, 0xBC, 0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3, 0xC4,
                                            0xC4, 0xD5, 0xD5, 0xE6, 0xE6, 0xF7, 0xF7, 0xF8}));
}

TEST(BlockQuantizers, Q8_0GoldenBlockRoundsHalvesAwayFromZero) {
  // amax 127 -> d = 1 (0x3C00); codes are round(x) with halves away from zero.
  std::vector<float> x(32, 0.0f);
  const float head[] = {127.0f, 0.5f, -0.5f, 2.5f, -2.5f, 1.49f, -126.6f};
  std::copy(std::begin(head), std::end(head), x.begin());
  const RoundTrip result = round_trip("q8_0", 1, 32, x);
  std::vector<std::uint8_t> expected = bytes_of({0x00, 0x3C, 127, 1, 0xFF, 3, 0xFD, 1, 0x81});
  expected.resize(34, 0);
  EXPECT_EQ(result.encoded.bytes, expected);
}

TEST(BlockQuantizers, CodesUseTheFp32ScaleAsGgmlDoes) {
  // d = 1 + 2^-12 exactly in fp32 but 1.0 in fp16 (0x3C00). ggml computes
  // codes with the fp32 d: 100.5/d = 100.48 -> 100 for q8_0, where the fp16
  // d would give 101; likewise 2.5/d + 8.5 -> 10 (q4_0) and 2.5/d + 0.5 -> 2
  // (q4_1) instead of 11 and 3.
  const float stretch = 1.0f + std::ldexp(1.0f, -12);
  std::vector<float> q8(32, 0.0f), q40(32, 0.0f), q41(32, 0.0f);
  q8[0] = 127.0f * stretch;  // amax -> d = stretch
  q8[1] = 100.5f;
  q40[0] = -8.0f * stretch;  // signed extreme -> d = stretch
  q40[1] = 2.5f;
  q41[1] = 15.0f * stretch;  // min 0, max -> d = stretch
  q41[2] = 2.5f;
  std::vector<std::uint8_t> expected8 = bytes_of({0x00, 0x3C, 127, 100});
  expected8.resize(34, 0);
  EXPECT_EQ(round_trip("q8_0", 1, 32, q8).encoded.bytes, expected8);
  std::vector<std::uint8_t> expected40 = bytes_of({0x00, 0x3C, 0x80, 0x8A});
  expected40.resize(18, 0x88);
  EXPECT_EQ(round_trip("q4_0", 1, 32, q40).encoded.bytes, expected40);
  std::vector<std::uint8_t> expected41 = bytes_of({0x00, 0x3C, 0x00, 0x00, 0x00, 0x0F, 0x02});
  expected41.resize(20, 0);
  EXPECT_EQ(round_trip("q4_1", 1, 32, q41).encoded.bytes, expected41);
}

// ---------------------------------------------------------------- registry-wide properties

TEST(BaselineRegistry, EveryBaselineMethodIsRegistered) {
  for (const std::string& name : kBaselineMethods) {
    const auto found = std::find_if(quantizer_methods().begin(), quantizer_methods().end(),
                                    [&](const MethodInfo& info) { return info.name == name; });
    ASSERT_NE(found, quantizer_methods().end()) << name;
    EXPECT_FALSE(found->summary.empty()) << name;
    EXPECT_FALSE(found->bits_formula.empty()) << name;
    EXPECT_FALSE(found->example_specs.empty()) << name;
  }
}

// ---------------------------------------------------------------- specs

TEST(BaselineSpecs, NonCanonicalSpecsAreCanonicalized) {
  EXPECT_EQ(make_quantizer("kivi:group=32,b=2")->spec(), "kivi:b=2");
  EXPECT_EQ(make_quantizer("kivi:group=64,b=3")->spec(), "kivi:b=3,group=64");
  EXPECT_EQ(make_quantizer("kivi:b=02")->spec(), "kivi:b=2");
}

TEST(BaselineSpecs, BadSpecsNameTheOption) {
  const auto message = [](const std::string& spec) {
    return input_error_message([&] { make_quantizer(spec); });
  };
  EXPECT_EQ(message("kivi"), "quantizer spec 'kivi': missing required option b (1..8)");
  EXPECT_EQ(message("kivi:group=16"), "quantizer spec 'kivi:group=16': missing required option b (1..8)");
  EXPECT_NE(message("kivi:b=0").find("b=0 is not allowed, expected an integer in 1..8"), std::string::npos);
  EXPECT_NE(message("kivi:b=9").find("1..8"), std::string::npos);
  EXPECT_NE(message("kivi:b=two").find("b=two"), std::string::npos);
  EXPECT_NE(message("kivi:b=2,group=0").find("group=0 is not allowed"), std::string::npos);
  EXPECT_NE(message("kivi:b=2,bits=3").find("unknown option 'bits' for 'kivi' (known: b, group)"), std::string::npos);
  EXPECT_NE(message("kivi:b").find("'b' needs a value"), std::string::npos);
  EXPECT_NE(message("fp8_e4m3:b=2").find("unknown option 'b' for 'fp8_e4m3' (known: scale)"), std::string::npos);
  EXPECT_NE(message("fp8_e4m3:scale=token").find("expected one of tensor|vector"), std::string::npos);
  for (const std::string name :
       {"fp16", "bf16", "fp32", "fp8_e5m2", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "int8", "mxfp4",
        "nvfp4"}) {
    EXPECT_NE(message(name + ":b=2").find("method '" + name + "' takes no options"), std::string::npos) << name;
    EXPECT_NE(message(name + ":fast").find("takes no options"), std::string::npos) << name;
  }
}

TEST(BlockQuantizers, HeadDimNotAMultipleOf32IsRejected) {
  for (const std::string spec : {"q8_0", "q4_0", "q4_1"}) {
    const auto quantizer = make_quantizer(spec);
    EXPECT_NO_THROW(quantizer->check_dim(64));
    const std::string message = input_error_message([&] { quantizer->check_dim(48); });
    EXPECT_NE(message.find("'" + spec + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("head dim 48 is not a multiple of 32"), std::string::npos) << message;
    const std::vector<float> x(8 * 48, 1.0f);
    EXPECT_THROW(quantizer->encode(8, 48, x.data(), context_for(Role::key)), InputError) << spec;
  }
  // Methods without a block structure take any head dim (the real dump has 8).
  for (const std::string spec : {"fp16", "fp8_e4m3", "kivi:b=2"}) EXPECT_NO_THROW(make_quantizer(spec)->check_dim(8));
}

TEST(BaselineRanges, ValuesBeyondFp16SideDataAreAnInputError) {
  std::vector<float> x(4 * 32, 1.0f);
  x[2 * 32 + 5] = 70000.0f;  // overflows fp16 itself, q4_0's d (70000/8) fits
  const std::string fp16 = input_error_message([&] { round_trip("fp16", 4, 32, x); });
  EXPECT_NE(fp16.find("token 2, channel 5"), std::string::npos) << fp16;
  EXPECT_NE(fp16.find("overflows fp16"), std::string::npos) << fp16;
  EXPECT_NO_THROW(round_trip("q4_0", 4, 32, x));
  x[2 * 32 + 5] = 1e7f;  // q4_0's d = 1.25e6 does not fit fp16
  const std::string q4 = input_error_message([&] { round_trip("q4_0", 4, 32, x); });
  EXPECT_NE(q4.find("token 2, channels 0..31"), std::string::npos) << q4;
  x[2 * 32 + 5] = -70000.0f;  // kivi's zero (the min) does not fit fp16
  const std::string kivi = input_error_message([&] { round_trip("kivi:b=2", 4, 32, x, Role::key); });
  EXPECT_NE(kivi.find("group starting at token 0, channel 5"), std::string::npos) << kivi;
  // Both ends fit fp16 but the span does not fit one step of kivi:b=1.
  x[2 * 32 + 5] = -60000.0f;
  x[2 * 32 + 9] = 60000.0f;
  const std::string span = input_error_message([&] { round_trip("kivi:b=1", 4, 32, x, Role::value); });
  EXPECT_NE(span.find("group starting at token 2, channel 0"), std::string::npos) << span;
}

}  // namespace
}  // namespace tqlab
