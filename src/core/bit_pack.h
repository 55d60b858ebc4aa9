// Bit packing: codes of any width 1..32 bits written back to back, least
// significant bit first, crossing byte boundaries (3-, 5-, 6-, 7-bit codes
// share bytes). The packed layout of a stream of n codes of width b is
// ceil(n*b/8) bytes; code i occupies bits [i*b, (i+1)*b) of the stream, bit k
// of the stream being bit (k % 8) of byte k / 8. One packer serves every
// format (tq's code and sign streams, KIVI's codes); tq's kernels
// (tq_kernels.h) fuse it with quantization and are tested against it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tqlab {

/// Writes `count` codes of `bits` bits (1..8) into the stream `out` starting
/// at stream bit `bit_offset`, in the layout above. The destination bits must
/// be zero (they are OR-ed in). codes: count values < 2^bits.
void pack_codes(std::size_t count, const std::uint8_t* codes, int bits, std::uint8_t* out, std::uint64_t bit_offset);

/// Reads `count` codes of `bits` bits from stream bit `bit_offset` of `in`.
void unpack_codes(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset, int bits, std::uint8_t* codes);

/// Bytes needed for n codes of `bits` bits each.
constexpr std::size_t packed_bytes(std::size_t count, int bits) {
  return (count * static_cast<std::size_t>(bits) + 7) / 8;
}

}  // namespace tqlab
