// The tq kernels: each fast form (AVX2 when built for it) against its portable
// form and its plain reference, bit for bit, on the sizes, offsets and values
// where the fast forms switch paths (tails of 4 / 16 rows and 8 / 32 values,
// unaligned bit offsets, values on and next to decision boundaries).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "bucketizing_values.h"
#include "core/bit_pack.h"
#include "core/rng.h"
#include "quant/codebook.h"
#include "quant/tq_kernels.h"

namespace tqlab {
namespace {

using tqlab::testing::bucketizing_values;

std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

// The definition the kernels implement: the number of float boundaries strictly below y.
int boundaries_below(const Codebook& codebook, float y) {
  int count = 0;
  for (float boundary : codebook.boundaries_f) count += boundary < y;
  return count;
}

// Rows whose entries span many binades.
std::vector<float> wide_range_values(std::size_t count, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values(count);
  for (float& v : values)
    v = static_cast<float>(rng.gaussian() * std::ldexp(1.0, static_cast<int>(rng.uniform() * 40) - 20));
  return values;
}

// A row (width >= 12) whose float norm depends on the order of the additions,
// down to one unit in the last place of the double sum. Squares 1, 2^-24,
// 2^-24, 2^-48 sum exactly to m^2, m = 1 + 2^-24 the midpoint between the
// floats 1 and 1 + 2^-23; one more square 2^-52 (one ulp of the sum) keeps
// sqrt below m + half an ulp, so the norm rounds to m and then (a tie, to
// even) to 1. Every other entry is 2^-27: its square 2^-54 vanishes when added
// to a running sum >= 1, as in index order (1 comes first). Any order that
// adds some of them together first (reversed, pairwise, one accumulator per
// SIMD lane) keeps at least one more ulp and gets 1 + 2^-23 instead.
// scale: a power of two (exact).
void fill_order_sensitive_row(int width, float scale, float* row) {
  for (int c = 0; c < width; ++c) row[c] = scale * std::ldexp(1.0f, -27);
  row[0] = scale;
  row[width / 3] = scale * std::ldexp(1.0f, -12);
  row[width / 2] = scale * std::ldexp(1.0f, -12);
  row[2 * width / 3] = scale * std::ldexp(1.0f, -26);
  row[width - 1] = scale * std::ldexp(1.0f, -24);
}

// The same squares summed from the last column to the first.
float reversed_norm(int width, const float* row) {
  double sum = 0;
  for (int c = width; c-- > 0;) sum += static_cast<double>(row[c]) * row[c];
  return static_cast<float>(std::sqrt(sum));
}

TEST(TqKernelsTest, RowNormsEqualVectorNormBitForBit) {
  int order_sensitive_rows = 0;
  for (int width : {2, 3, 4, 5, 8, 12, 32, 96, 128, 130, 256}) {
    for (std::int64_t rows : {1, 3, 4, 5, 15, 16, 17, 37}) {
      for (std::int64_t padding : {0, 3}) {
        const std::int64_t stride = width + padding;
        auto x = wide_range_values(static_cast<std::size_t>(rows * stride), 100 + width + rows);
        // Every third row is order-sensitive, at scales 2^-8 .. 2^8.
        for (std::int64_t r = 0; width >= 12 && r < rows; r += 3) {
          fill_order_sensitive_row(width, std::ldexp(1.0f, static_cast<int>(r % 17) - 8), x.data() + r * stride);
        }
        std::vector<float> fast(static_cast<std::size_t>(rows)), reference(fast.size());
        row_norms(rows, width, stride, x.data(), fast.data());
        row_norms_reference(rows, width, stride, x.data(), reference.data());
        for (std::int64_t r = 0; r < rows; ++r) {
          const auto i = static_cast<std::size_t>(r);
          ASSERT_EQ(float_bits(fast[i]), float_bits(reference[i])) << "width " << width << " rows " << rows
                                                                   << " row " << r;
          ASSERT_EQ(reference[i], vector_norm(width, x.data() + r * stride));
          order_sensitive_rows += reversed_norm(width, x.data() + r * stride) != reference[i];
        }
      }
    }
  }
  EXPECT_GT(order_sensitive_rows, 100) << "the data must be able to expose a changed order of additions";
}

// The certificate the SIMD norms rest on: whenever it accepts the sum of a
// row's squares taken in another order (reversed, pairwise, eight lanes), the
// float norm of that sum is vector_norm's, bit for bit. The order-sensitive
// rows (whose norm does change with the order) must all be refused, and
// ordinary rows almost never.
TEST(TqKernelsTest, NormCertificateNeverAcceptsADifferentNorm) {
  const auto reversed_sum = [](int width, const float* row) {
    double sum = 0;
    for (int c = width; c-- > 0;) sum += static_cast<double>(row[c]) * row[c];
    return sum;
  };
  const auto lane_sum = [](int width, const float* row) {
    double lanes[8] = {};
    for (int c = 0; c < width; ++c) lanes[c % 8] += static_cast<double>(row[c]) * row[c];
    return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  };
  int accepted = 0, refused = 0, order_sensitive = 0;
  for (int width : {12, 32, 128, 256}) {
    for (int r = 0; r < 400; ++r) {
      std::vector<float> row = wide_range_values(static_cast<std::size_t>(width), 7000 + r + width);
      if (r % 2 == 0) fill_order_sensitive_row(width, std::ldexp(1.0f, r % 13 - 6), row.data());
      const float expected = vector_norm(width, row.data());
      for (const double sum : {reversed_sum(width, row.data()), lane_sum(width, row.data())}) {
        const bool differs = static_cast<float>(std::sqrt(sum)) != expected;
        order_sensitive += differs;
        if (norm_is_order_independent(sum, width)) {
          ++accepted;
          ASSERT_EQ(float_bits(static_cast<float>(std::sqrt(sum))), float_bits(expected))
              << "width " << width << " row " << r;
        } else {
          ++refused;
        }
      }
    }
  }
  EXPECT_GT(order_sensitive, 100) << "the rows must be able to expose an accepted wrong norm";
  EXPECT_LT(refused, order_sensitive + 20) << "ordinary rows should pass the certificate";
  EXPECT_GT(accepted, 1000);
  // Edges: zero, the largest float, beyond it, NaN.
  EXPECT_TRUE(norm_is_order_independent(0.0, 128));
  EXPECT_FALSE(norm_is_order_independent(std::numeric_limits<double>::quiet_NaN(), 128));
  EXPECT_FALSE(norm_is_order_independent(1e80, 128));
  const double largest = std::numeric_limits<float>::max();
  EXPECT_FALSE(norm_is_order_independent(largest * largest, 128));
  // A root exactly on the midpoint between the floats 1 and 1 + 2^-23 is refused, one far from it accepted.
  const double midpoint = 1.0 + 0x1p-24;
  EXPECT_FALSE(norm_is_order_independent(midpoint * midpoint, 2));
  EXPECT_TRUE(norm_is_order_independent(1.0, 2));
}

// The codebooks the kernels see: every codebook the registry builds for the
// block sizes in use — every bit width, each distribution, at tiny blocks (far
// from Gaussian: 2..8), the blocks and head dims of real models (16 .. 576,
// including 80, 96, 127 and the outlier groups' odd sizes) and the largest
// (4096).
std::vector<const Codebook*> kernel_codebooks() {
  std::vector<const Codebook*> codebooks;
  for (int bits = 1; bits <= 8; ++bits) {
    for (int dim : {2, 3, 4, 5, 6, 7, 8, 16, 24, 32, 48, 64, 80, 96, 120, 127, 128, 192, 256, 576, 4096}) {
      for (CodebookDistribution distribution : kCodebookDistributionNames.values()) {
        codebooks.push_back(&lloyd_max_codebook(dim, bits, distribution));
      }
    }
  }
  return codebooks;
}

std::string describe(const Codebook& codebook) {
  return "b=" + std::to_string(codebook.bits) + " d=" + std::to_string(codebook.dim) + " " +
         std::string(codebook_distribution_name(codebook.distribution));
}

// Every form against the documented rule (codebook.h, tq_kernels.h): the code
// of y is the number of float boundaries strictly below it, so a value equal
// to boundary k takes level k (the lower one), one ulp below it level k, one
// ulp above it level k + 1; and away from the boundaries that is the nearest
// level. The expected codes are written from that rule, not from any form.
TEST(TqKernelsTest, EveryFormFollowsTheDocumentedTieRule) {
  std::size_t checked = 0;
  for (const Codebook* codebook : kernel_codebooks()) {
    std::vector<float> y;
    std::vector<std::uint8_t> expected;
    for (std::size_t k = 0; k < codebook->boundaries_f.size(); ++k) {
      const float boundary = codebook->boundaries_f[k];
      const auto code = static_cast<std::uint8_t>(k);
      y.insert(y.end(), {boundary, std::nextafter(boundary, -INFINITY), std::nextafter(boundary, INFINITY)});
      expected.insert(expected.end(), {code, code, static_cast<std::uint8_t>(code + 1)});
    }
    const std::uint8_t last = static_cast<std::uint8_t>(codebook->centroids_f.size() - 1);
    y.insert(y.end(), {-10.0f, 10.0f});  // gauss levels reach past ±1 at small d
    expected.insert(expected.end(), {0, last});
    const int n = static_cast<int>(y.size());
    std::vector<std::uint8_t> fast(y.size()), portable(y.size()), reference(y.size());
    quantize_to_codes(n, y.data(), *codebook, fast.data());
    quantize_to_codes_portable(n, y.data(), *codebook, portable.data());
    quantize_to_codes_reference(n, y.data(), *codebook, reference.data());
    for (std::size_t i = 0; i < y.size(); ++i) {
      ASSERT_EQ(fast[i], expected[i]) << describe(*codebook) << " y=" << y[i];
      ASSERT_EQ(portable[i], expected[i]) << describe(*codebook) << " y=" << y[i];
      ASSERT_EQ(reference[i], expected[i]) << describe(*codebook) << " y=" << y[i];
      ++checked;
    }
  }
  EXPECT_GT(checked, 90000u);
}

// Away from the boundaries the rule is the nearest level: random coordinates
// of a rotated unit vector, each at least 1e-6 from every boundary, get the
// level of least |y - c| (by a scan in double), from every form.
TEST(TqKernelsTest, AwayFromBoundariesEveryFormPicksTheNearestLevel) {
  for (const Codebook* codebook : kernel_codebooks()) {
    const auto y = bucketizing_values(*codebook, 7);
    const int n = static_cast<int>(y.size());
    std::vector<std::uint8_t> fast(y.size()), portable(y.size()), reference(y.size());
    quantize_to_codes(n, y.data(), *codebook, fast.data());
    quantize_to_codes_portable(n, y.data(), *codebook, portable.data());
    quantize_to_codes_reference(n, y.data(), *codebook, reference.data());
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      ASSERT_EQ(fast[k], reference[k]) << describe(*codebook) << " y=" << y[k];
      ASSERT_EQ(portable[k], reference[k]) << describe(*codebook) << " y=" << y[k];
      ASSERT_EQ(reference[k], boundaries_below(*codebook, y[k])) << describe(*codebook) << " y=" << y[k];
      double nearest_distance = INFINITY;
      int nearest = 0;
      for (std::size_t level = 0; level < codebook->centroids.size(); ++level) {
        const double distance = std::fabs(static_cast<double>(y[k]) - codebook->centroids[level]);
        if (distance < nearest_distance) {
          nearest_distance = distance;
          nearest = static_cast<int>(level);
        }
      }
      // Beyond |y| = 16 (FLT_MAX, Inf) every level is equally far in double: no nearest to check.
      bool near_boundary = !(std::fabs(y[k]) <= 16.0f);
      for (double boundary : codebook->boundaries) near_boundary |= std::fabs(y[k] - boundary) < 1e-6;
      if (!near_boundary) {
        ASSERT_EQ(reference[k], nearest) << describe(*codebook) << " y=" << y[k];
      }
    }
  }
}

// Packs the same values three ways into buffers whose bits outside the target
// range are all ones (other sections' data): the bytes must agree, and the
// neighbours must survive.
TEST(TqKernelsTest, QuantizeAndPackMatchesPortableAndReference) {
  for (const Codebook* codebook : kernel_codebooks()) {
    if (codebook->dim != 128 || codebook->distribution != CodebookDistribution::beta) continue;
    const int bits = codebook->bits;
    const auto all = bucketizing_values(*codebook, 11);
    for (std::size_t count : {0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 128, 203}) {
      for (std::uint64_t bit_offset : {0, 8, 24, 3, 13}) {
        const std::uint64_t end_bit = bit_offset + count * static_cast<std::uint64_t>(bits);
        const std::size_t size = packed_bytes(end_bit + 11, 1);
        std::vector<std::uint8_t> before(size, 0xFF);
        for (std::uint64_t bit = bit_offset; bit < end_bit; ++bit)
          before[bit / 8] &= static_cast<std::uint8_t>(~(1u << (bit % 8)));
        auto fast = before, portable = before, reference = before;
        quantize_and_pack(count, all.data(), *codebook, fast.data(), bit_offset);
        quantize_and_pack_portable(count, all.data(), *codebook, portable.data(), bit_offset);
        quantize_and_pack_reference(count, all.data(), *codebook, reference.data(), bit_offset);
        ASSERT_EQ(fast, reference) << "b=" << bits << " count " << count << " offset " << bit_offset;
        ASSERT_EQ(portable, reference) << "b=" << bits << " count " << count << " offset " << bit_offset;
        // The reference itself: each code read back is the code of its value.
        std::vector<std::uint8_t> codes(count);
        unpack_codes(count, reference.data(), bit_offset, bits, codes.data());
        for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(codes[i], boundaries_below(*codebook, all[i])) << i;
      }
    }
  }
}

TEST(TqKernelsTest, UnpackAndDequantizeMatchesPortableAndReference) {
  Rng rng(5);
  for (const Codebook* codebook : kernel_codebooks()) {
    if (codebook->dim != 32 || codebook->distribution != CodebookDistribution::beta) continue;
    const int bits = codebook->bits;
    for (std::size_t count : {0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 128, 300}) {
      for (std::uint64_t bit_offset : {0, 8, 40, 5, 14}) {
        std::vector<std::uint8_t> codes(count);
        for (auto& code : codes) code = static_cast<std::uint8_t>(rng.next_u64() >> (64 - bits));
        // Exactly the stream's bytes, so that any read past them is an error under ASan.
        std::vector<std::uint8_t> stream(packed_bytes(bit_offset + count * static_cast<std::uint64_t>(bits), 1));
        for (auto& byte : stream) byte = static_cast<std::uint8_t>(rng.next_u64());
        for (std::uint64_t bit = bit_offset; bit < bit_offset + count * static_cast<std::uint64_t>(bits); ++bit) {
          stream[bit / 8] &= static_cast<std::uint8_t>(~(1u << (bit % 8)));
        }
        pack_codes(count, codes.data(), bits, stream.data(), bit_offset);
        std::vector<float> fast(count), portable(count), reference(count);
        unpack_and_dequantize(count, stream.data(), bit_offset, *codebook, fast.data());
        unpack_and_dequantize_portable(count, stream.data(), bit_offset, *codebook, portable.data());
        unpack_and_dequantize_reference(count, stream.data(), bit_offset, *codebook, reference.data());
        for (std::size_t i = 0; i < count; ++i) {
          const float expected = codebook->centroids_f[codes[i]];
          ASSERT_EQ(float_bits(reference[i]), float_bits(expected)) << "b=" << bits << " count " << count << " i " << i;
          ASSERT_EQ(float_bits(fast[i]), float_bits(expected)) << "b=" << bits << " count " << count << " offset "
                                                               << bit_offset << " i " << i;
          ASSERT_EQ(float_bits(portable[i]), float_bits(expected)) << "b=" << bits << " count " << count
                                                                   << " offset " << bit_offset << " i " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tqlab
