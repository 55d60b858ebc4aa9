#include "core/bit_pack.h"

#include <array>
#include <cassert>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>  // baseline on x86-64
#endif

namespace tqlab {

// Fast paths: byte-aligned runs of 1, 2, 4 or 8-bit codes, where whole bytes
// are assembled at once. Everything else goes through the generic loop, which
// the fast paths must match bit for bit (tests/bit_pack_test.cpp).

namespace {

// kSpreadBits[b]: byte b as eight 0/1 bytes, bit k of b in byte k (little-endian word).
constexpr std::array<std::uint64_t, 256> kSpreadBits = [] {
  std::array<std::uint64_t, 256> table{};
  for (unsigned b = 0; b < 256; ++b) {
    for (unsigned k = 0; k < 8; ++k) table[b] |= static_cast<std::uint64_t>((b >> k) & 1u) << (8 * k);
  }
  return table;
}();

}  // namespace

void pack_codes(std::size_t count, const std::uint8_t* codes, int bits, std::uint8_t* out, std::uint64_t bit_offset) {
  assert(bits >= 1 && bits <= 8);
  const bool aligned = bit_offset % 8 == 0 && (count * static_cast<std::size_t>(bits)) % 8 == 0;
  if (aligned && bits == 1) {
    // Eight 0/1 bytes b_0..b_7 (little-endian word x, b_k at bit 8k) into one
    // byte: x * sum_k 2^(56-7k) puts b_k at bit 56+k; the other products land
    // at or above bit 64 (dropped) or below bit 56 without carrying into it
    // (their sum is below 2^56).
    std::uint8_t* at = out + bit_offset / 8;
    const std::size_t bytes = count / 8;
    std::size_t byte = 0;
#if defined(__SSE2__)
    // Sixteen at a time (the QJL signs' path): bit 0 of each byte shifted to
    // its bit 7 (a 64-bit shift by 7 moves bit 8k to bit 8k + 7), which
    // movemask gathers, byte k to bit k.
    for (; byte + 2 <= bytes; byte += 2) {
      const __m128i sixteen = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 8 * byte));
      const auto mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_slli_epi64(sixteen, 7)));
      at[byte] |= static_cast<std::uint8_t>(mask);
      at[byte + 1] |= static_cast<std::uint8_t>(mask >> 8);
    }
#endif
    for (; byte < bytes; ++byte) {
      std::uint64_t word;
      std::memcpy(&word, codes + 8 * byte, sizeof word);
      at[byte] |= static_cast<std::uint8_t>(((word & 0x0101010101010101u) * 0x0102040810204080u) >> 56);
    }
    return;
  }
  if (aligned && (bits == 8 || bits == 4 || bits == 2)) {
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
  if (aligned && bits == 1) {
    // One byte into eight 0/1 bytes: one lookup.
    const std::uint8_t* at = in + bit_offset / 8;
    for (std::size_t byte = 0; byte < count / 8; ++byte) std::memcpy(codes + 8 * byte, &kSpreadBits[at[byte]], 8);
    return;
  }
  if (aligned && (bits == 8 || bits == 4 || bits == 2)) {
    const std::uint8_t* at = in + bit_offset / 8;
    const int per_byte = 8 / bits;
    const std::size_t bytes = count / static_cast<std::size_t>(per_byte);
    for (std::size_t byte = 0; byte < bytes; ++byte) {
      const unsigned packed = at[byte];
      for (int k = 0; k < per_byte; ++k)
        codes[byte * per_byte + k] = static_cast<std::uint8_t>((packed >> (k * bits)) & mask);
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
