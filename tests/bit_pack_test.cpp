// Bit packing: the stream layout, every width, fast paths against the generic one.
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/bit_pack.h"

namespace tqlab {
namespace {

// The layout by its definition, one bit at a time: stream bit k of code i is
// bit k of the code, at stream position offset + i * bits + k.
std::vector<std::uint8_t> pack_bit_by_bit(const std::vector<std::uint8_t>& codes, int bits, std::uint64_t offset) {
  std::vector<std::uint8_t> out(packed_bytes(offset + codes.size() * static_cast<std::size_t>(bits), 1), 0);
  for (std::size_t i = 0; i < codes.size(); ++i) {
    for (int k = 0; k < bits; ++k) {
      const std::uint64_t bit = offset + i * static_cast<std::uint64_t>(bits) + static_cast<std::uint64_t>(k);
      if ((codes[i] >> k) & 1u) out[bit / 8] |= static_cast<std::uint8_t>(1u << (bit % 8));
    }
  }
  return out;
}

TEST(BitPackTest, LayoutIsLeastSignificantBitFirst) {
  // Three 3-bit codes 5, 3, 6 -> bits 101 110 011 from bit 0: byte0 = 0b10_011_101, byte1 = 0b1.
  const std::uint8_t codes[] = {5, 3, 6};
  std::vector<std::uint8_t> out(2, 0);
  pack_codes(3, codes, 3, out.data(), 0);
  EXPECT_EQ(out[0], 0b10011101);
  EXPECT_EQ(out[1], 0b1);
}

TEST(BitPackTest, NibblesLowFirst) {
  const std::uint8_t codes[] = {0x1, 0xA, 0xF, 0x3};
  std::vector<std::uint8_t> out(2, 0);
  pack_codes(4, codes, 4, out.data(), 0);
  EXPECT_EQ(out[0], 0xA1);
  EXPECT_EQ(out[1], 0x3F);
}

TEST(BitPackTest, EveryWidthAndOffsetRoundTrips) {
  std::mt19937 generator(7);
  for (int bits = 1; bits <= 8; ++bits) {
    for (std::uint64_t offset : {0u, 3u, 8u, 13u}) {
      for (std::size_t count : {1u, 7u, 8u, 16u, 24u, 64u, 128u, 129u}) {
        std::vector<std::uint8_t> codes(count);
        for (auto& code : codes) code = static_cast<std::uint8_t>(generator() & ((1u << bits) - 1));
        std::vector<std::uint8_t> packed(packed_bytes(count, bits) + 3, 0);
        pack_codes(count, codes.data(), bits, packed.data(), offset);
        const std::vector<std::uint8_t> reference = pack_bit_by_bit(codes, bits, offset);
        for (std::size_t i = 0; i < reference.size(); ++i) ASSERT_EQ(packed[i], reference[i]) << bits << " " << offset;
        std::vector<std::uint8_t> unpacked(count);
        unpack_codes(count, packed.data(), offset, bits, unpacked.data());
        ASSERT_EQ(unpacked, codes) << "bits " << bits << " offset " << offset << " count " << count;
      }
    }
  }
}

TEST(BitPackTest, PackedBytesRoundsUp) {
  EXPECT_EQ(packed_bytes(128, 3), 48u);
  EXPECT_EQ(packed_bytes(3, 3), 2u);
  EXPECT_EQ(packed_bytes(0, 5), 0u);
}

}  // namespace
}  // namespace tqlab
