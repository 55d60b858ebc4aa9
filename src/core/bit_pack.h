// Bit packing: codes of any width 1..32 bits written back to back, least
// significant bit first, crossing byte boundaries (3-, 5-, 6-, 7-bit codes
// share bytes). The packed layout of a stream of n codes of width b is
// ceil(n*b/8) bytes; code i occupies bits [i*b, (i+1)*b) of the stream, bit k
// of the stream being bit (k % 8) of byte k / 8.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tqlab {

/// Appends codes to a byte vector.
class BitWriter {
 public:
  explicit BitWriter(std::vector<std::uint8_t>& out) : out_(out) {}
  ~BitWriter() { flush(); }

  /// Appends the low `bits` bits of `code` (1 <= bits <= 32).
  void put(std::uint32_t code, int bits) {
    assert(bits >= 1 && bits <= 32);
    assert(bits == 32 || (code >> bits) == 0);
    buffer_ |= static_cast<std::uint64_t>(code) << filled_;
    filled_ += bits;
    while (filled_ >= 8) {
      out_.push_back(static_cast<std::uint8_t>(buffer_));
      buffer_ >>= 8;
      filled_ -= 8;
    }
  }
  /// Appends raw little-endian bytes of a value (after flushing to a byte boundary).
  template <typename T>
  void put_bytes(const T& value) {
    flush();
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
    out_.insert(out_.end(), bytes, bytes + sizeof(T));
  }
  /// Pads the pending bits with zeros to a whole byte.
  void flush() {
    if (filled_ > 0) {
      out_.push_back(static_cast<std::uint8_t>(buffer_));
      buffer_ = 0;
      filled_ = 0;
    }
  }

 private:
  std::vector<std::uint8_t>& out_;
  std::uint64_t buffer_ = 0;
  int filled_ = 0;
};

/// Reads codes written by BitWriter. Reading past the end asserts.
class BitReader {
 public:
  BitReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::uint32_t get(int bits) {
    assert(bits >= 1 && bits <= 32);
    while (filled_ < bits) {
      assert(position_ < size_);
      buffer_ |= static_cast<std::uint64_t>(data_[position_++]) << filled_;
      filled_ += 8;
    }
    const std::uint32_t code = static_cast<std::uint32_t>(buffer_ & ((std::uint64_t{1} << bits) - 1));
    buffer_ >>= bits;
    filled_ -= bits;
    return code;
  }
  template <typename T>
  T get_bytes() {
    align();
    assert(position_ + sizeof(T) <= size_);
    T value;
    std::memcpy(&value, data_ + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }
  /// Drops the pending bits up to the next byte boundary.
  void align() {
    buffer_ = 0;
    filled_ = 0;
  }
  std::size_t position() const { return position_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t position_ = 0;
  std::uint64_t buffer_ = 0;
  int filled_ = 0;
};

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
