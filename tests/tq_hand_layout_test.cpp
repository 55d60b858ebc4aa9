// tq's packed layout checked against bytes written by hand: the
// pinned-layout goldens were recorded from the implementation itself; these
// are derived on paper from the layout documented in src/quant/tq_layout.h
// and the codebook levels, with rot=none and norm=fp32 so that every step is
// visible: u = x / ||x||, code = number of boundaries strictly below u_i (a
// value on a boundary takes the lower level), codes LSB-first in one stream
// ordered by (token, block), then the fp32 norms, then (center=block) the fp16
// means. The decoded floats are computed by hand from the same levels.
//
// The levels (Lloyd–Max beta codebooks, tested independently in
// codebook_test.cpp) used below, to 4 decimals:
//   d = 4: b=1 ±0.4244 | b=2 ±0.2194 ±0.6744 (boundaries 0, ±0.4469)
//          b=3 ±0.1117 ±0.3370 ±0.5691 ±0.8179 (boundaries 0, ±0.2244, ±0.4531, ±0.6935)
//   d = 8: b=1 ±0.2910 | b=2 ±0.1579 ±0.5048 (boundaries 0, ±0.3314)
//          b=3 ±0.0828 ±0.2524 ±0.4362 ±0.6577 (boundaries 0, ±0.1676, ±0.3443, ±0.5469)
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "quant/codebook.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

using Bytes = std::vector<std::uint8_t>;

// fp32 norms as stored: 5 = 0x40A00000, 7 = 0x40E00000, 4 = 0x40800000, little-endian.
const Bytes kNorm0 = {0x00, 0x00, 0x00, 0x00};
const Bytes kNorm4 = {0x00, 0x00, 0x80, 0x40};
const Bytes kNorm5 = {0x00, 0x00, 0xA0, 0x40};
const Bytes kNorm7 = {0x00, 0x00, 0xE0, 0x40};

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

// The float level `code` of the (dim, bits) beta codebook.
float level(int dim, int bits, int code) {
  return lloyd_max_codebook(dim, bits, CodebookDistribution::beta).centroids_f[static_cast<std::size_t>(code)];
}

struct HandCase {
  std::string spec;
  int dim;
  std::vector<float> x;         // tokens x dim
  Bytes bytes;                  // written by hand
  std::vector<float> decoded;   // computed by hand
};

void check(const HandCase& hand) {
  SCOPED_TRACE(hand.spec + " at d = " + std::to_string(hand.dim));
  const auto quantizer = make_quantizer(hand.spec);
  const std::int64_t tokens = static_cast<std::int64_t>(hand.x.size()) / hand.dim;
  const QuantContext context{1, Role::key, 0, 0};
  const EncodedTensor encoded = quantizer->encode(tokens, hand.dim, hand.x.data(), context);
  EXPECT_EQ(encoded.bytes, hand.bytes);
  // Decode the hand-written bytes, not the encoder's.
  const EncodedTensor written{tokens, hand.dim, hand.bytes};
  std::vector<float> decoded(hand.x.size());
  quantizer->decode(written, context, decoded.data());
  for (std::size_t i = 0; i < decoded.size(); ++i) EXPECT_FLOAT_EQ(decoded[i], hand.decoded[i]) << "value " << i;
}

// The levels the hand derivations rely on (so that a changed codebook shows
// here as such, not as a layout failure).
TEST(TqHandLayoutTest, LevelsAreTheOnesTheHandDerivationsUse) {
  EXPECT_NEAR(level(4, 1, 1), 0.4244, 5e-5);
  EXPECT_NEAR(lloyd_max_codebook(4, 2, CodebookDistribution::beta).boundaries[2], 0.4469, 5e-5);
  EXPECT_NEAR(lloyd_max_codebook(4, 3, CodebookDistribution::beta).boundaries[4], 0.2244, 5e-5);
  EXPECT_NEAR(lloyd_max_codebook(4, 3, CodebookDistribution::beta).boundaries[5], 0.4531, 5e-5);
  EXPECT_NEAR(lloyd_max_codebook(8, 2, CodebookDistribution::beta).boundaries[2], 0.3314, 5e-5);
  EXPECT_NEAR(lloyd_max_codebook(8, 3, CodebookDistribution::beta).boundaries[4], 0.1676, 5e-5);
  EXPECT_NEAR(lloyd_max_codebook(8, 3, CodebookDistribution::beta).boundaries[5], 0.3443, 5e-5);
  EXPECT_NEAR(lloyd_max_codebook(8, 3, CodebookDistribution::beta).boundaries[6], 0.5469, 5e-5);
}

// d = 4, two tokens: x0 = (2, -1, 2, -4), ||x0|| = 5, u = (0.4, -0.2, 0.4, -0.8);
// x1 = 0 (norm 0; u = 0 sits on the middle boundary and takes the level below it).
TEST(TqHandLayoutTest, FourDimsOneToThreeBits) {
  const std::vector<float> x = {2, -1, 2, -4, 0, 0, 0, 0};
  // b = 1: codes 1 0 1 0 | 0 0 0 0 -> one byte 0b0000'0101.
  check({"tq:b=1,rot=none,norm=fp32", 4, x, concat({{0x05}, kNorm5, kNorm0}),
         {5 * level(4, 1, 1), 5 * level(4, 1, 0), 5 * level(4, 1, 1), 5 * level(4, 1, 0), 0, 0, 0, 0}});
  // b = 2: 0.4 in (0, 0.4469] -> 2, -0.2 -> 1, -0.8 -> 0, 0 -> 1:
  // codes 2 1 2 0 | 1 1 1 1 -> 0b00'10'01'10 = 0x26, 0b01'01'01'01 = 0x55.
  check({"tq:b=2,rot=none,norm=fp32", 4, x, concat({{0x26, 0x55}, kNorm5, kNorm0}),
         {5 * level(4, 2, 2), 5 * level(4, 2, 1), 5 * level(4, 2, 2), 5 * level(4, 2, 0), 0, 0, 0, 0}});
  // b = 3: 0.4 in (0.2244, 0.4531] -> 5, -0.2 in (-0.2244, 0] -> 3, -0.8 -> 0, 0 -> 3:
  // codes 5 3 5 0 | 3 3 3 3, 3 bits each from bit 0: 0x5D 0xB1 0x6D.
  check({"tq:b=3,rot=none,norm=fp32", 4, x, concat({{0x5D, 0xB1, 0x6D}, kNorm5, kNorm0}),
         {5 * level(4, 3, 5), 5 * level(4, 3, 3), 5 * level(4, 3, 5), 5 * level(4, 3, 0), 0, 0, 0, 0}});
}

// d = 8, one token: x = (5, -4, 2, -2, 0, 0, 0, 0), ||x|| = 7,
// u = (0.7143, -0.5714, 0.2857, -0.2857, 0, 0, 0, 0).
TEST(TqHandLayoutTest, EightDimsOneToThreeBits) {
  const std::vector<float> x = {5, -4, 2, -2, 0, 0, 0, 0};
  // Codes as digit strings: GCC 12.2 at -O2 -march=znver1 (this machine's
  // -march=native) builds std::vector<int>{1, 0, 1, 0, 0, 0, 0, 0} as
  // 1 0 1 0 1 0 1 0 (a miscompiled constant store), which a braced list here hit.
  auto times7 = [](int bits, const std::string& codes) {
    std::vector<float> out;
    for (char code : codes) out.push_back(7 * level(8, bits, code - '0'));
    return out;
  };
  // b = 1: codes 1 0 1 0 0 0 0 0 -> 0x05.
  check({"tq:b=1,rot=none,norm=fp32", 8, x, concat({{0x05}, kNorm7}), times7(1, "10100000")});
  // b = 2: 0.7143 -> 3, -0.5714 -> 0, 0.2857 -> 2, -0.2857 -> 1, 0 -> 1: 0x63 0x55.
  check({"tq:b=2,rot=none,norm=fp32", 8, x, concat({{0x63, 0x55}, kNorm7}), times7(2, "30211111")});
  // b = 3: 0.7143 -> 7, -0.5714 -> 0, 0.2857 in (0.1676, 0.3443] -> 5,
  // -0.2857 in (-0.3443, -0.1676] -> 2, 0 -> 3: codes 7 0 5 2 3 3 3 3: 0x47 0xB5 0x6D.
  check({"tq:b=3,rot=none,norm=fp32", 8, x, concat({{0x47, 0xB5, 0x6D}, kNorm7}),
         times7(3, "70523333")});
}

// nc: the decoded direction c = (c2, c1, c2, c0) is rescaled to unit length
// before the norm: x~ = c * (1 / ||c||) * 5, in that order, in float.
TEST(TqHandLayoutTest, NormCorrectionRescalesTheLevels) {
  const float c2 = level(4, 2, 2), c1 = level(4, 2, 1), c0 = level(4, 2, 0);
  const float length = static_cast<float>(std::sqrt(static_cast<double>(c2) * c2 * 2 + static_cast<double>(c1) * c1 +
                                                    static_cast<double>(c0) * c0));
  const float scale = 1.0f / length;
  check({"tq:b=2,rot=none,nc,norm=fp32", 4, {2, -1, 2, -4}, concat({{0x26}, kNorm5}),
         {c2 * scale * 5, c1 * scale * 5, c2 * scale * 5, c0 * scale * 5}});
}

// block=4 at d = 8: x = (2, -1, 2, -4 | 5, -4, 2, -2), two blocks with the d = 4
// codebook: (0.4, -0.2, 0.4, -0.8) -> 2 1 2 0 and (0.7143, -0.5714, 0.2857,
// -0.2857) -> 3 0 2 1; one code stream by (token, block): 0x26 0x63; norms 5, 7.
TEST(TqHandLayoutTest, BlocksShareOneCodeStream) {
  check({"tq:b=2,block=4,rot=none,norm=fp32", 8, {2, -1, 2, -4, 5, -4, 2, -2}, concat({{0x26, 0x63}, kNorm5, kNorm7}),
         {5 * level(4, 2, 2), 5 * level(4, 2, 1), 5 * level(4, 2, 2), 5 * level(4, 2, 0), 7 * level(4, 2, 3),
          7 * level(4, 2, 0), 7 * level(4, 2, 2), 7 * level(4, 2, 1)}});
}

// center=block: x = (2.5, 2.5, -1.5, -1.5) has mean 0.5 (fp16 0x3800), centered
// (2, 2, -2, -2), norm 4, u = (0.5, 0.5, -0.5, -0.5) -> codes 3 3 0 0 = 0x0F;
// then the fp32 norm and the fp16 mean. x~ = level * 4, then + 0.5.
TEST(TqHandLayoutTest, BlockMeanFollowsTheNorms) {
  const float high = level(4, 2, 3) * 4, low = level(4, 2, 0) * 4;
  check({"tq:b=2,rot=none,norm=fp32,center=block", 4, {2.5f, 2.5f, -1.5f, -1.5f},
         concat({{0x0F}, kNorm4, {0x00, 0x38}}), {high + 0.5f, high + 0.5f, low + 0.5f, low + 0.5f}});
}

}  // namespace
}  // namespace tqlab
