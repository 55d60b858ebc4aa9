#include "core/bit_pack.h"

#include <cassert>

namespace tqlab {

// Fast paths: byte-aligned runs of 1, 2, 4 or 8-bit codes, where whole bytes
// are assembled at once. Everything else goes through the generic loop, which
// the fast paths must match bit for bit (tests/bit_pack_test.cpp).

void pack_codes(std::size_t count, const std::uint8_t* codes, int bits, std::uint8_t* out, std::uint64_t bit_offset) {
  assert(bits >= 1 && bits <= 8);
  const bool aligned = bit_offset % 8 == 0 && (count * static_cast<std::size_t>(bits)) % 8 == 0;
  if (aligned && (bits == 8 || bits == 4 || bits == 2 || bits == 1)) {
    std::uint8_t* at = out + bit_offset / 8;
    const int per_byte = 8 / bits;
    const std::size_t bytes = count / static_cast<std::size_t>(per_byte);
    for (std::size_t byte = 0; byte < bytes; ++byte) {
      unsigned packed = 0;
      for (int k = 0; k < per_byte; ++k) packed |= static_cast<unsigned>(codes[byte * per_byte + k]) << (k * bits);
      at[byte] |= static_cast<std::uint8_t>(packed);
    }
    return;
  }
  std::uint64_t bit = bit_offset;
  for (std::size_t i = 0; i < count; ++i, bit += static_cast<std::uint64_t>(bits)) {
    const unsigned shifted = static_cast<unsigned>(codes[i]) << (bit % 8);
    out[bit / 8] |= static_cast<std::uint8_t>(shifted);
    if ((bit % 8) + static_cast<std::uint64_t>(bits) > 8) out[bit / 8 + 1] |= static_cast<std::uint8_t>(shifted >> 8);
  }
}

void unpack_codes(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset, int bits, std::uint8_t* codes) {
  assert(bits >= 1 && bits <= 8);
  const unsigned mask = (1u << bits) - 1u;
  const bool aligned = bit_offset % 8 == 0 && (count * static_cast<std::size_t>(bits)) % 8 == 0;
  if (aligned && (bits == 8 || bits == 4 || bits == 2 || bits == 1)) {
    const std::uint8_t* at = in + bit_offset / 8;
    const int per_byte = 8 / bits;
    const std::size_t bytes = count / static_cast<std::size_t>(per_byte);
    for (std::size_t byte = 0; byte < bytes; ++byte) {
      const unsigned packed = at[byte];
      for (int k = 0; k < per_byte; ++k) codes[byte * per_byte + k] = static_cast<std::uint8_t>((packed >> (k * bits)) & mask);
    }
    return;
  }
  std::uint64_t bit = bit_offset;
  for (std::size_t i = 0; i < count; ++i, bit += static_cast<std::uint64_t>(bits)) {
    unsigned window = in[bit / 8];
    if ((bit % 8) + static_cast<std::uint64_t>(bits) > 8) window |= static_cast<unsigned>(in[bit / 8 + 1]) << 8;
    codes[i] = static_cast<std::uint8_t>((window >> (bit % 8)) & mask);
  }
}

}  // namespace tqlab
