// Kernels of the tq quantizer: block norms, bucketizing rotated coordinates
// against the Lloyd–Max decision boundaries, and packing / unpacking codes.
//
// Source: TurboQuant (Zandieh et al., arXiv:2504.19874), Algorithm 1: per
// rotated coordinate y_j, idx_j = argmin_k |y_j - c_k| (quantize) and
// y~_j = c_{idx_j} (dequantize). For ascending centroids the nearest level is
// the number of decision boundaries (midpoints) below y_j (codebook.h), which
// is what every form below computes.
//
// Packed layout (core/bit_pack.h): code i of a stream of b-bit codes occupies
// stream bits [i*b, (i+1)*b), least significant bit first, so eight codes
// always fill exactly b bytes, and 32 codes 4b bytes:
//   b = 4: byte k = code 2k | code 2k+1 << 4
//   b = 8: byte k = code k
//   other: the 8b-bit little-endian word of eight codes, code k at bit k*b.
//
// Why the AVX2 and portable forms return the same bits (and the same as the
// references):
// - norms: the square of a float is exact in double (48 significant bits), so
//   a SIMD lane that holds one row and adds its squares in index order rounds
//   exactly as vector_norm does (an FMA, should the compiler contract the
//   multiply-add, rounds the same); sqrt and double -> float are correctly
//   rounded in both.
// - bucketizing: the boundaries ascend, so "y > boundary[k]" is monotone in k
//   and the search tree finds the same count as comparing against all of them.
// - packing is integer work.
#include "quant/tq_kernels.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <utility>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "core/bit_pack.h"

namespace tqlab {

// ---------------------------------------------------------------------------
// Norms

float vector_norm(int n, const float* x) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return static_cast<float>(std::sqrt(sum));
}

void row_norms_reference(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms) {
  for (std::int64_t r = 0; r < n; ++r) norms[r] = vector_norm(width, x + r * stride);
}

#ifdef __AVX2__
namespace {

inline __m256d add_squares(__m256d sum, __m128 column) {
  const __m256d values = _mm256_cvtps_pd(column);
  return _mm256_add_pd(sum, _mm256_mul_pd(values, values));
}

// Norms of 4 * Groups rows. Each row's sum is a chain of `width` dependent
// additions; Groups independent accumulators keep the adder busy while each
// chain waits on its latency. Four rows' 4-column tiles are transposed so that
// one register holds one column of four rows.
template <int Groups>
void row_norms_interleaved(int width, std::int64_t stride, const float* x, float* norms) {
  __m256d sums[Groups];
  for (int g = 0; g < Groups; ++g) sums[g] = _mm256_setzero_pd();
  int column = 0;
  for (; column + 4 <= width; column += 4) {
    for (int g = 0; g < Groups; ++g) {
      const float* tile = x + 4 * g * stride + column;
      __m128 row0 = _mm_loadu_ps(tile);
      __m128 row1 = _mm_loadu_ps(tile + stride);
      __m128 row2 = _mm_loadu_ps(tile + 2 * stride);
      __m128 row3 = _mm_loadu_ps(tile + 3 * stride);
      _MM_TRANSPOSE4_PS(row0, row1, row2, row3);  // now rowK holds column `column + K` of the four rows
      sums[g] = add_squares(sums[g], row0);
      sums[g] = add_squares(sums[g], row1);
      sums[g] = add_squares(sums[g], row2);
      sums[g] = add_squares(sums[g], row3);
    }
  }
  for (; column < width; ++column) {
    for (int g = 0; g < Groups; ++g) {
      const float* at = x + 4 * g * stride + column;
      sums[g] = add_squares(sums[g], _mm_setr_ps(at[0], at[stride], at[2 * stride], at[3 * stride]));
    }
  }
  for (int g = 0; g < Groups; ++g) _mm_storeu_ps(norms + 4 * g, _mm256_cvtpd_ps(_mm256_sqrt_pd(sums[g])));
}

}  // namespace
#endif

void row_norms(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms) {
  std::int64_t r = 0;
#ifdef __AVX2__
  for (; r + 16 <= n; r += 16) row_norms_interleaved<4>(width, stride, x + r * stride, norms + r);
  for (; r + 4 <= n; r += 4) row_norms_interleaved<1>(width, stride, x + r * stride, norms + r);
#endif
  row_norms_reference(n - r, width, stride, x + r * stride, norms + r);
}

// ---------------------------------------------------------------------------
// Bucketizing

void quantize_to_codes_portable(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
  const float* boundaries = codebook.boundaries_f.data();
  const int count = static_cast<int>(codebook.boundaries_f.size());
  if (codebook.bits <= 4) {
    // At most 15 boundaries: compare every value against each; the loops vectorize.
    for (int i = 0; i < n; ++i) {
      int code = 0;
      for (int k = 0; k < count; ++k) code += y[i] > boundaries[k];
      codes[i] = static_cast<std::uint8_t>(code);
    }
    return;
  }
  // 2^b - 1 boundaries: search the implicit tree, one comparison per bit.
  for (int i = 0; i < n; ++i) {
    int code = 0;
    for (int step = 1 << (codebook.bits - 1); step > 0; step >>= 1) {
      code += (y[i] > boundaries[code + step - 1]) ? step : 0;
    }
    codes[i] = static_cast<std::uint8_t>(code);
  }
}

void quantize_to_codes_reference(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
  // The definition itself: count the float boundaries strictly below y. (A
  // nearest-centroid scan would be the same rule away from the boundaries but
  // could pick the other neighbour within rounding of one, since boundaries_f
  // are the double midpoints rounded to float.)
  for (int i = 0; i < n; ++i) {
    int below = 0;
    for (const float boundary : codebook.boundaries_f) below += boundary < y[i] ? 1 : 0;
    codes[i] = static_cast<std::uint8_t>(below);
  }
}

// ---------------------------------------------------------------------------
// Word-at-a-time packing of eight codes (no SIMD intrinsics)

namespace {

// Eight code bytes are moved in and out of a 64-bit word with memcpy, byte k
// becoming bits [8k, 8k + 8): that is the stream's order on little-endian
// machines only.
static_assert(std::endian::native == std::endian::little, "the word-at-a-time packing assumes little-endian");

constexpr std::uint64_t low_bits(int count) { return count >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << count) - 1; }
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

}  // namespace

// ---------------------------------------------------------------------------
// Quantize + pack

void quantize_and_pack_reference(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                                 std::uint64_t bit_offset) {
  std::uint8_t codes[kPortableChunk];
  for (std::size_t first = 0; first < count; first += kPortableChunk) {
    const std::size_t n = std::min(kPortableChunk, count - first);
    quantize_to_codes_reference(static_cast<int>(n), y + first, codebook, codes);
    pack_codes(n, codes, codebook.bits, out, bit_offset + first * static_cast<std::uint64_t>(codebook.bits));
  }
}

void quantize_and_pack_portable(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                                std::uint64_t bit_offset) {
  const int bits = codebook.bits;
  std::uint8_t codes[kPortableChunk];
  // Bytes this call may overwrite whole (a last partial byte may be shared).
  const std::uint8_t* end = out + (bit_offset + count * static_cast<std::uint64_t>(bits)) / 8;
  for (std::size_t first = 0; first < count; first += kPortableChunk) {
    const std::size_t n = std::min(kPortableChunk, count - first);
    const std::uint64_t chunk_bit = bit_offset + first * static_cast<std::uint64_t>(bits);
    quantize_to_codes_portable(static_cast<int>(n), y + first, codebook, codes);
    std::size_t done = 0;
    if (chunk_bit % 8 == 0) {
      std::uint8_t* at = out + chunk_bit / 8;
      for (; done + 8 <= n; done += 8, at += bits) {
        std::uint64_t spread;
        std::memcpy(&spread, codes + done, 8);
        store_group(join_codes(spread, bits), bits, at, at + 8 <= end);
      }
    }
    pack_codes(n - done, codes + done, bits, out, chunk_bit + done * static_cast<std::uint64_t>(bits));
  }
}

void unpack_and_dequantize_reference(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                     const Codebook& codebook, float* y) {
  std::uint8_t codes[kPortableChunk];
  for (std::size_t first = 0; first < count; first += kPortableChunk) {
    const std::size_t n = std::min(kPortableChunk, count - first);
    unpack_codes(n, in, bit_offset + first * static_cast<std::uint64_t>(codebook.bits), codebook.bits, codes);
    for (std::size_t i = 0; i < n; ++i) y[first + i] = codebook.centroids_f[codes[i]];
  }
}

void unpack_and_dequantize_portable(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                    const Codebook& codebook, float* y) {
  const int bits = codebook.bits;
  const float* centroids = codebook.centroids_f.data();
  std::uint8_t codes[kPortableChunk];
  const std::uint8_t* end = in + (bit_offset + count * static_cast<std::uint64_t>(bits) + 7) / 8;
  for (std::size_t first = 0; first < count; first += kPortableChunk) {
    const std::size_t n = std::min(kPortableChunk, count - first);
    const std::uint64_t chunk_bit = bit_offset + first * static_cast<std::uint64_t>(bits);
    std::size_t done = 0;
    if (chunk_bit % 8 == 0) {
      const std::uint8_t* at = in + chunk_bit / 8;
      for (; done + 8 <= n; done += 8, at += bits) {
        const std::uint64_t spread = split_codes(load_group(at, bits, at + 8 <= end), bits);
        std::memcpy(codes + done, &spread, 8);
      }
    }
    unpack_codes(n - done, in, chunk_bit + done * static_cast<std::uint64_t>(bits), bits, codes + done);
    for (std::size_t i = 0; i < n; ++i) y[first + i] = centroids[codes[i]];
  }
}

// ---------------------------------------------------------------------------
// AVX2 forms

#ifdef __AVX2__
namespace {

// The implicit search tree of 2^Bits - 1 ascending boundaries. The code is
// built from its top bit down: after k levels, `prefix` holds the code's top
// k bits, and level k compares against the boundary just below the upper
// half of the prefix's range, boundary[(2 prefix + 1) 2^(Bits-k-1) - 1];
// above it, the next bit is 1. Levels with up to 16 candidates keep them in
// registers indexed by the prefix (two registers and a blend for 16); deeper
// levels gather from memory, which is slow on many x86 cores.
template <int Bits>
struct SearchTree {
  static constexpr int kTableLevels = Bits < 5 ? Bits : 5;
  __m256 level_candidates[kTableLevels][2];  // level k: candidate j at lane j % 8 of register j / 8
  __m256 root;                               // level 0's only candidate in every lane
  const float* boundaries;

  explicit SearchTree(const Codebook& codebook) : boundaries(codebook.boundaries_f.data()) {
    for (int level = 0; level < kTableLevels; ++level) {
      const int half = 1 << (Bits - level - 1);
      alignas(32) float candidates[16] = {};
      for (int j = 0; j < (1 << level); ++j) candidates[j] = boundaries[(2 * j + 1) * half - 1];
      level_candidates[level][0] = _mm256_load_ps(candidates);
      level_candidates[level][1] = _mm256_load_ps(candidates + 8);
    }
    root = _mm256_set1_ps(boundaries[(1 << (Bits - 1)) - 1]);
  }

  // Codes of eight values, one per int32 lane.
  __m256i codes_of(__m256 y) const {
    __m256i prefix = _mm256_setzero_si256();
    [&]<int... Level>(std::integer_sequence<int, Level...>) {
      (descend<Level>(y, prefix), ...);
    }(std::make_integer_sequence<int, Bits>{});
    return prefix;
  }

  // One level: prefix = 2 prefix + (y above the candidate). The comparison
  // mask is -1 where above, so the new bit is added by subtracting it.
  template <int Level>
  void descend(__m256 y, __m256i& prefix) const {
    __m256 threshold;
    if constexpr (Level == 0) {
      threshold = root;
    } else if constexpr (Level < 4) {
      threshold = _mm256_permutevar8x32_ps(level_candidates[Level][0], prefix);
    } else if constexpr (Level == 4) {
      // 16 candidates: the permutes use the prefix's low 3 bits, bit 3 (moved
      // to the sign bit) picks the register.
      const __m256 low = _mm256_permutevar8x32_ps(level_candidates[Level][0], prefix);
      const __m256 high = _mm256_permutevar8x32_ps(level_candidates[Level][1], prefix);
      threshold = _mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_slli_epi32(prefix, 28)));
    } else {
      constexpr int kHalf = 1 << (Bits - Level - 1);
      const __m256i index = _mm256_add_epi32(_mm256_slli_epi32(prefix, Bits - Level), _mm256_set1_epi32(kHalf - 1));
      threshold = _mm256_i32gather_ps(boundaries, index, 4);
    }
    const __m256i above = _mm256_castps_si256(_mm256_cmp_ps(y, threshold, _CMP_GT_OQ));
    prefix = _mm256_sub_epi32(_mm256_add_epi32(prefix, prefix), above);
  }
};

// Four registers of int32 codes (values 0..255) as 32 bytes in order.
inline __m256i codes_to_bytes(__m256i c0, __m256i c1, __m256i c2, __m256i c3) {
  // The packs work within 128-bit lanes: the result holds 4-code runs in the
  // order c0 lo, c1 lo, c2 lo, c3 lo | c0 hi, c1 hi, c2 hi, c3 hi.
  const __m256i words01 = _mm256_packus_epi32(c0, c1);
  const __m256i words23 = _mm256_packus_epi32(c2, c3);
  const __m256i bytes = _mm256_packus_epi16(words01, words23);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// 32 code bytes written as 4*Bits packed bytes at `at`. The generic width
// stores whole 8-byte words (their spill is zeros) while they end by `end`.
template <int Bits>
inline void store_packed(__m256i codes, std::uint8_t* at, const std::uint8_t* end) {
  if constexpr (Bits == 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), codes);
  } else if constexpr (Bits == 4) {
    // code 2k + 16 * code 2k+1 in each 16-bit lane, then the low bytes.
    const __m256i pairs = _mm256_maddubs_epi16(codes, _mm256_set1_epi16(0x1001));
    const __m256i packed = _mm256_packus_epi16(pairs, pairs);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(at),
                     _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0b00'00'10'00)));
  } else {
    // join_codes on the four 64-bit lanes at once (lane g = codes 8g .. 8g+7).
    constexpr std::uint64_t field1 = every_16_bits(low_bits(Bits));
    constexpr std::uint64_t field2 = every_32_bits(low_bits(2 * Bits));
    constexpr std::uint64_t field4 = low_bits(4 * Bits);
    const auto mask = [](std::uint64_t field) { return _mm256_set1_epi64x(static_cast<long long>(field)); };
    __m256i v = codes;
    v = _mm256_or_si256(_mm256_and_si256(v, mask(field1)),
                        _mm256_and_si256(_mm256_srli_epi64(v, 8 - Bits), mask(field1 << Bits)));
    v = _mm256_or_si256(_mm256_and_si256(v, mask(field2)),
                        _mm256_and_si256(_mm256_srli_epi64(v, 16 - 2 * Bits), mask(field2 << (2 * Bits))));
    v = _mm256_or_si256(_mm256_and_si256(v, mask(field4)),
                        _mm256_and_si256(_mm256_srli_epi64(v, 32 - 4 * Bits), mask(field4 << (4 * Bits))));
    alignas(32) std::uint64_t words[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(words), v);
    for (int g = 0; g < 4; ++g) store_group(words[g], Bits, at + g * Bits, at + g * Bits + 8 <= end);
  }
}

template <int Bits>
void quantize_and_pack_avx2(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                            std::uint64_t bit_offset) {
  const SearchTree<Bits> tree(codebook);
  std::uint8_t* at = out + bit_offset / 8;
  const std::uint8_t* end = out + (bit_offset + count * Bits) / 8;
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32, at += 4 * Bits) {
    const __m256i c0 = tree.codes_of(_mm256_loadu_ps(y + i));
    const __m256i c1 = tree.codes_of(_mm256_loadu_ps(y + i + 8));
    const __m256i c2 = tree.codes_of(_mm256_loadu_ps(y + i + 16));
    const __m256i c3 = tree.codes_of(_mm256_loadu_ps(y + i + 24));
    store_packed<Bits>(codes_to_bytes(c0, c1, c2, c3), at, end);
  }
  // 32 codes fill whole bytes, so the rest starts on a byte boundary.
  quantize_and_pack_portable(count - i, y + i, codebook, out, bit_offset + i * Bits);
}

// Centroid lookup for eight int32 codes: up to 8 levels one permute, 16 levels
// two permutes and a blend on bit 3, more a gather.
template <int Bits>
struct CentroidTable {
  __m256 low, high;
  const float* centroids;

  explicit CentroidTable(const Codebook& codebook) : centroids(codebook.centroids_f.data()) {
    alignas(32) float table[16] = {};
    std::copy_n(centroids, std::min(16, 1 << Bits), table);
    low = _mm256_load_ps(table);
    high = _mm256_load_ps(table + 8);
  }

  __m256 values_of(__m256i codes) const {
    if constexpr (Bits <= 3) {
      return _mm256_permutevar8x32_ps(low, codes);
    } else if constexpr (Bits == 4) {
      const __m256 from_low = _mm256_permutevar8x32_ps(low, codes);
      const __m256 from_high = _mm256_permutevar8x32_ps(high, codes);
      return _mm256_blendv_ps(from_low, from_high, _mm256_castsi256_ps(_mm256_slli_epi32(codes, 28)));
    } else {
      return _mm256_i32gather_ps(centroids, codes, 4);
    }
  }
};

// The 4*Bits packed bytes at `at` as 32 code bytes in order. The generic
// width reads whole 8-byte words while they end by `end`.
template <int Bits>
inline __m256i load_packed(const std::uint8_t* at, const std::uint8_t* end) {
  if constexpr (Bits == 8) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
  } else if constexpr (Bits == 4) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i low = _mm_and_si128(packed, nibble);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(packed, 4), nibble);
    return _mm256_set_m128i(_mm_unpackhi_epi8(low, high), _mm_unpacklo_epi8(low, high));
  } else {
    // split_codes on the four 64-bit lanes at once.
    alignas(32) std::uint64_t groups[4];
    for (int g = 0; g < 4; ++g) groups[g] = load_group(at + g * Bits, Bits, at + g * Bits + 8 <= end);
    const __m256i words = _mm256_load_si256(reinterpret_cast<const __m256i*>(groups));
    constexpr std::uint64_t field1 = every_16_bits(low_bits(Bits));
    constexpr std::uint64_t field2 = every_32_bits(low_bits(2 * Bits));
    constexpr std::uint64_t field4 = low_bits(4 * Bits);
    const auto mask = [](std::uint64_t field) { return _mm256_set1_epi64x(static_cast<long long>(field)); };
    __m256i v = words;
    v = _mm256_or_si256(_mm256_and_si256(v, mask(field4)),
                        _mm256_and_si256(_mm256_slli_epi64(v, 32 - 4 * Bits), mask(field4 << 32)));
    v = _mm256_or_si256(_mm256_and_si256(v, mask(field2)),
                        _mm256_and_si256(_mm256_slli_epi64(v, 16 - 2 * Bits), mask(field2 << 16)));
    return _mm256_or_si256(_mm256_and_si256(v, mask(field1)),
                           _mm256_and_si256(_mm256_slli_epi64(v, 8 - Bits), mask(field1 << 8)));
  }
}

template <int Bits>
void unpack_and_dequantize_avx2(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                const Codebook& codebook, float* y) {
  const CentroidTable<Bits> table(codebook);
  const std::uint8_t* at = in + bit_offset / 8;
  const std::uint8_t* end = in + (bit_offset + count * Bits + 7) / 8;
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32, at += 4 * Bits) {
    const __m256i codes = load_packed<Bits>(at, end);
    const __m128i low = _mm256_castsi256_si128(codes);
    const __m128i high = _mm256_extracti128_si256(codes, 1);
    _mm256_storeu_ps(y + i, table.values_of(_mm256_cvtepu8_epi32(low)));
    _mm256_storeu_ps(y + i + 8, table.values_of(_mm256_cvtepu8_epi32(_mm_srli_si128(low, 8))));
    _mm256_storeu_ps(y + i + 16, table.values_of(_mm256_cvtepu8_epi32(high)));
    _mm256_storeu_ps(y + i + 24, table.values_of(_mm256_cvtepu8_epi32(_mm_srli_si128(high, 8))));
  }
  unpack_and_dequantize_portable(count - i, in, bit_offset + i * Bits, codebook, y + i);
}

// Calls Kernel<bits>::run(args...) for bits = 1..8.
template <template <int> class Kernel, typename... Args>
void dispatch_bits(int bits, Args&&... args) {
  switch (bits) {
    case 1: return Kernel<1>::run(args...);
    case 2: return Kernel<2>::run(args...);
    case 3: return Kernel<3>::run(args...);
    case 4: return Kernel<4>::run(args...);
    case 5: return Kernel<5>::run(args...);
    case 6: return Kernel<6>::run(args...);
    case 7: return Kernel<7>::run(args...);
    case 8: return Kernel<8>::run(args...);
  }
  assert(false && "bits outside 1..8");
}

template <int Bits>
struct QuantizeToCodes {
  static void run(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
    const SearchTree<Bits> tree(codebook);
    int i = 0;
    for (; i + 32 <= n; i += 32) {
      const __m256i c0 = tree.codes_of(_mm256_loadu_ps(y + i));
      const __m256i c1 = tree.codes_of(_mm256_loadu_ps(y + i + 8));
      const __m256i c2 = tree.codes_of(_mm256_loadu_ps(y + i + 16));
      const __m256i c3 = tree.codes_of(_mm256_loadu_ps(y + i + 24));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + i), codes_to_bytes(c0, c1, c2, c3));
    }
    quantize_to_codes_portable(n - i, y + i, codebook, codes + i);
  }
};

template <int Bits>
struct QuantizeAndPack {
  static void run(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                  std::uint64_t bit_offset) {
    quantize_and_pack_avx2<Bits>(count, y, codebook, out, bit_offset);
  }
};

template <int Bits>
struct UnpackAndDequantize {
  static void run(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset, const Codebook& codebook,
                  float* y) {
    unpack_and_dequantize_avx2<Bits>(count, in, bit_offset, codebook, y);
  }
};

}  // namespace
#endif

void quantize_to_codes(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
#ifdef __AVX2__
  dispatch_bits<QuantizeToCodes>(codebook.bits, n, y, codebook, codes);
#else
  quantize_to_codes_portable(n, y, codebook, codes);
#endif
}

void quantize_and_pack(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                       std::uint64_t bit_offset) {
#ifdef __AVX2__
  if (bit_offset % 8 == 0) return dispatch_bits<QuantizeAndPack>(codebook.bits, count, y, codebook, out, bit_offset);
#endif
  quantize_and_pack_portable(count, y, codebook, out, bit_offset);
}

void unpack_and_dequantize(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                           const Codebook& codebook, float* y) {
#ifdef __AVX2__
  if (bit_offset % 8 == 0) {
    return dispatch_bits<UnpackAndDequantize>(codebook.bits, count, in, bit_offset, codebook, y);
  }
#endif
  unpack_and_dequantize_portable(count, in, bit_offset, codebook, y);
}

}  // namespace tqlab
