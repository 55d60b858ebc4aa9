// Eight b-bit codes as one 64-bit word: the word-at-a-time packing shared by
// the portable and the SIMD forms of the tq kernels (tq_kernels*.cpp).
// Internal to the kernels; the stream layout is core/bit_pack.h's.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tqlab::code_words {

// Eight code bytes are moved in and out of a 64-bit word with memcpy, byte k
// becoming bits [8k, 8k + 8): that is the stream's order on little-endian
// machines only.
static_assert(std::endian::native == std::endian::little, "the word-at-a-time packing assumes little-endian");

constexpr std::uint64_t low_bits(int count) {
  return count >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << count) - 1;
}
constexpr std::uint64_t every_16_bits(std::uint64_t field) { return field * 0x0001000100010001ull; }
constexpr std::uint64_t every_32_bits(std::uint64_t field) { return field * 0x0000000100000001ull; }

// Eight codes of `bits` bits, code k in byte k of `spread`, moved together
// into the low 8*bits bits (code k at bit k*bits). Three rounds, each joining
// neighbouring pairs: b-bit codes in 8-bit slots -> 2b-bit fields in 16-bit
// slots -> 4b in 32 -> 8b in 64.
constexpr std::uint64_t join_codes(std::uint64_t spread, int bits) {
  const std::uint64_t field1 = every_16_bits(low_bits(bits));
  spread = (spread & field1) | ((spread >> (8 - bits)) & (field1 << bits));
  const std::uint64_t field2 = every_32_bits(low_bits(2 * bits));
  spread = (spread & field2) | ((spread >> (16 - 2 * bits)) & (field2 << (2 * bits)));
  const std::uint64_t field4 = low_bits(4 * bits);
  return (spread & field4) | ((spread >> (32 - 4 * bits)) & (field4 << (4 * bits)));
}

// The inverse of join_codes: the low 8*bits bits of `packed` spread to one
// code per byte (the masks drop any higher bits).
constexpr std::uint64_t split_codes(std::uint64_t packed, int bits) {
  const std::uint64_t field4 = low_bits(4 * bits);
  packed = (packed & field4) | ((packed << (32 - 4 * bits)) & (field4 << 32));
  const std::uint64_t field2 = every_32_bits(low_bits(2 * bits));
  packed = (packed & field2) | ((packed << (16 - 2 * bits)) & (field2 << 16));
  const std::uint64_t field1 = every_16_bits(low_bits(bits));
  return (packed & field1) | ((packed << (8 - bits)) & (field1 << 8));
}

static_assert(join_codes(0x0706050403020100ull, 4) == 0x76543210ull);
static_assert(split_codes(0x76543210ull, 4) == 0x0706050403020100ull);
static_assert(join_codes(0x0101010101010101ull, 1) == 0xFFull);
static_assert(split_codes(join_codes(0x0705030106040200ull, 3), 3) == 0x0705030106040200ull);

// The eight codes' `bits` bytes at `at` in the low bits of a word; `room`
// says whether a whole 8-byte word may be read there (its bytes past the
// group are then in the high bits, which split_codes ignores).
inline std::uint64_t load_group(const std::uint8_t* at, int bits, bool room) {
  std::uint64_t word = 0;
  if (room) {
    std::memcpy(&word, at, 8);
    return word;
  }
  for (int k = 0; k < bits; ++k) word |= static_cast<std::uint64_t>(at[k]) << (8 * k);
  return word;
}

// Writes the `bits` bytes of a joined group at `at`; with `room`, one 8-byte
// store whose upper bytes (zero) land where the next group will be written.
inline void store_group(std::uint64_t word, int bits, std::uint8_t* at, bool room) {
  if (room) {
    std::memcpy(at, &word, 8);
    return;
  }
  for (int k = 0; k < bits; ++k) at[k] = static_cast<std::uint8_t>(word >> (8 * k));
}

// Values handled per step of the portable loops (a stack buffer of codes).
constexpr std::size_t kPortableChunk = 256;

}  // namespace tqlab::code_words
