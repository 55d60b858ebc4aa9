// The AVX2 + FMA forms of the tq kernels (tq_kernels.h), chosen at run time
// by tq_kernels.cpp when the CPU has them (core/kernel_set.h). Compiled in a
// target region (core/simd_target.h): every #include comes before it.
//
// They return the same bits as the portable forms (tq_kernels.cpp says why);
// tests/kernel_dispatch_test.cpp runs every form on the same inputs.
#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "core/simd_intrinsics.h"
#include "quant/code_words.h"
#include "quant/tq_kernels.h"
#include "quant/tq_kernels_simd.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX2_BEGIN

namespace tqlab::simd {
namespace {

using namespace code_words;

#include "quant/code_words_avx2.inc"

// ---------------------------------------------------------------------------
// Norms

// One row's squares added in four accumulators of four lanes, then lane by
// lane: four partial sums whose total is the row's sum in an order of its own
// (row_norms_avx2 certifies the result, whatever the order). The columns past
// the last multiple of four come in one masked load, zeros elsewhere.
inline __m256d partial_sums_of_squares(int width, const float* x) {
  __m256d sums[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  int column = 0;
  for (; column + 16 <= width; column += 16) {
    for (int a = 0; a < 4; ++a) {
      const __m256d values = _mm256_cvtps_pd(_mm_loadu_ps(x + column + 4 * a));
      sums[a] = _mm256_fmadd_pd(values, values, sums[a]);
    }
  }
  for (; column + 4 <= width; column += 4) {
    const __m256d values = _mm256_cvtps_pd(_mm_loadu_ps(x + column));
    sums[0] = _mm256_fmadd_pd(values, values, sums[0]);
  }
  if (column < width) {
    // Lane k loads when k < width - column: its mask lane has the sign bit set.
    const __m128i lanes = _mm_cmpgt_epi32(_mm_set1_epi32(width - column), _mm_setr_epi32(0, 1, 2, 3));
    const __m256d values = _mm256_cvtps_pd(_mm_maskload_ps(x + column, lanes));
    sums[1] = _mm256_fmadd_pd(values, values, sums[1]);
  }
  return _mm256_add_pd(_mm256_add_pd(sums[0], sums[1]), _mm256_add_pd(sums[2], sums[3]));
}

// Lane k of the result: the total of partials[k]'s four lanes. Adjacent lanes
// of two rows at a time (hadd), then the two 128-bit halves: 5 operations for
// four rows where a reduction per row takes 4 each, and the four sums land in
// one register for the vector certificate.
inline __m256d totals_of_four(const __m256d* partials) {
  const __m256d rows01 = _mm256_hadd_pd(partials[0], partials[1]);  // r0 01, r1 01, r0 23, r1 23
  const __m256d rows23 = _mm256_hadd_pd(partials[2], partials[3]);  // r2 01, r3 01, r2 23, r3 23
  return _mm256_add_pd(_mm256_permute2f128_pd(rows01, rows23, 0x20), _mm256_permute2f128_pd(rows01, rows23, 0x31));
}

// ---------------------------------------------------------------------------
// Bucketizing and packing

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
    [&]<int... Level>(std::integer_sequence<int, Level...>) { (descend<Level>(y, prefix), ...); }
    (std::make_integer_sequence<int, Bits>{});
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

// Codes of eight values, one per int32 lane, by counting boundaries, for a
// codebook of at most 16 levels whose boundaries are symmetric about 0: the
// middle one is 0 and boundary m - 1 - j is minus boundary m + 1 + j, the
// j-th of the P = 2^(b-1) - 1 positive ones p_j (m = 2^(b-1) - 1). Every
// Lloyd–Max codebook is, to the bit (codebook.cpp mirrors the centroids).
// The code, #{k : boundary k < y}, is then
//   y > 0:   2^(b-1) + #{j : p_j < y}
//   y <= 0:  P - #{j : p_j <= |y|}  =  (2^b - 1) xor (2^(b-1) + #{j : p_j <= |y|}),
// and both counts are integer comparisons of float bits, which order
// non-negative floats as their values do: bits(|y|) > bits(p_j), with 1
// added to bits(|y|) where y <= 0 to turn ">" into ">=". No permutes: P
// compares and subtractions, where the search tree takes a lane-crossing
// permute per level (slow on some x86 cores, e.g. 4 cycles on AMD Zen 1).
// Finite y only, as quantize_to_codes: a NaN counts as above every boundary
// (the tree and the portable forms give it 0).
template <int Bits>
struct SymmetricCount {
  static_assert(Bits <= 4);
  static constexpr int kMiddle = (1 << (Bits - 1)) - 1;
  static constexpr int kPositive = kMiddle;
  __m256i positive_bits[kPositive > 0 ? kPositive : 1];

  // True when `codebook` has the symmetry the count relies on, with positive
  // boundaries above 0 (not NaN: their bits must order as their values).
  static bool fits(const Codebook& codebook) {
    const float* boundaries = codebook.boundaries_f.data();
    if (boundaries[kMiddle] != 0.0f) return false;
    for (int j = 0; j < kPositive; ++j) {
      const float positive = boundaries[kMiddle + 1 + j];
      if (!(positive > 0.0f) || boundaries[kMiddle - 1 - j] != -positive) return false;
    }
    return true;
  }

  explicit SymmetricCount(const Codebook& codebook) {
    for (int j = 0; j < kPositive; ++j) {
      positive_bits[j] = _mm256_set1_epi32(std::bit_cast<std::int32_t>(codebook.boundaries_f[kMiddle + 1 + j]));
    }
  }

  __m256i codes_of(__m256 y) const {
    const __m256i not_positive = _mm256_castps_si256(_mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LE_OQ));
    const __m256i magnitude = _mm256_and_si256(_mm256_castps_si256(y), _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i compared = _mm256_sub_epi32(magnitude, not_positive);  // + 1 where y <= 0
    __m256i code = _mm256_set1_epi32(kMiddle + 1);
    for (int j = 0; j < kPositive; ++j) code = _mm256_sub_epi32(code, _mm256_cmpgt_epi32(compared, positive_bits[j]));
    return _mm256_xor_si256(code, _mm256_and_si256(not_positive, _mm256_set1_epi32((1 << Bits) - 1)));
  }
};

// The codes of a codebook: by SymmetricCount where it applies (at most 16
// levels, symmetric boundaries), otherwise by SearchTree.
template <int Bits>
struct Bucketizer {
  explicit Bucketizer(const Codebook& codebook) : tree(codebook) {}
  SearchTree<Bits> tree;
};

template <int Bits>
  requires(Bits <= 4)
struct Bucketizer<Bits> {
  explicit Bucketizer(const Codebook& codebook) {
    if (SymmetricCount<Bits>::fits(codebook)) {
      count.emplace(codebook);
    } else {
      tree.emplace(codebook);
    }
  }
  std::optional<SymmetricCount<Bits>> count;  ///< exactly one of the two is set
  std::optional<SearchTree<Bits>> tree;
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

// Centroid lookup for eight int32 codes of more than 4 bits (32 to 256
// levels): a gather. Narrower codes take CentroidPlanes.
template <int Bits>
struct CentroidTable {
  static_assert(Bits > 4);
  const float* centroids;

  explicit CentroidTable(const Codebook& codebook) : centroids(codebook.centroids_f.data()) {}

  __m256 values_of(__m256i codes) const { return _mm256_i32gather_ps(centroids, codes, 4); }
};

// Centroid lookup for 32 codes of at most 4 bits at once: byte k of every
// centroid's float bits in plane k (entry i, both 128-bit lanes), picked by
// the codes with one byte shuffle per plane and interleaved back into floats,
// so the floats are the table's bits. 4 shuffles and 8 unpacks per 32 codes
// where CentroidTable takes 3 or 4 operations and a widening per 8.
template <int Bits>
struct CentroidPlanes {
  static_assert(Bits <= 4);
  __m256i plane[4];

  explicit CentroidPlanes(const Codebook& codebook) {
    for (int k = 0; k < 4; ++k) {
      alignas(32) std::uint8_t bytes[32] = {};
      for (int i = 0; i < (1 << Bits); ++i) {
        const auto bits = std::bit_cast<std::uint32_t>(codebook.centroids_f[static_cast<std::size_t>(i)]);
        bytes[i] = bytes[16 + i] = static_cast<std::uint8_t>(bits >> (8 * k));
      }
      plane[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(bytes));
    }
  }

  // y[i] = centroid of code byte i, i < 32.
  void store_32(__m256i codes, float* y) const {
    // The unpacks below interleave within 128-bit lanes and take each lane's
    // bytes 4j .. 4j+3 for output register j: lane 0 must hold codes 0-3,
    // 8-11, 16-19, 24-27 and lane 1 codes 4-7, 12-15, 20-23, 28-31.
    const __m256i spread = _mm256_permutevar8x32_epi32(codes, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    const __m256i byte0 = _mm256_shuffle_epi8(plane[0], spread);
    const __m256i byte1 = _mm256_shuffle_epi8(plane[1], spread);
    const __m256i byte2 = _mm256_shuffle_epi8(plane[2], spread);
    const __m256i byte3 = _mm256_shuffle_epi8(plane[3], spread);
    const __m256i low01 = _mm256_unpacklo_epi8(byte0, byte1);
    const __m256i high01 = _mm256_unpackhi_epi8(byte0, byte1);
    const __m256i low23 = _mm256_unpacklo_epi8(byte2, byte3);
    const __m256i high23 = _mm256_unpackhi_epi8(byte2, byte3);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm256_unpacklo_epi16(low01, low23));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 8), _mm256_unpackhi_epi16(low01, low23));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 16), _mm256_unpacklo_epi16(high01, high23));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + 24), _mm256_unpackhi_epi16(high01, high23));
  }
};

// The 32 codes of y[0 .. 32) as 32 bytes in order, by `rule` (SearchTree or SymmetricCount).
template <typename Rule>
inline __m256i codes_of_32(const Rule& rule, const float* y) {
  const __m256i c0 = rule.codes_of(_mm256_loadu_ps(y));
  const __m256i c1 = rule.codes_of(_mm256_loadu_ps(y + 8));
  const __m256i c2 = rule.codes_of(_mm256_loadu_ps(y + 16));
  const __m256i c3 = rule.codes_of(_mm256_loadu_ps(y + 24));
  return codes_to_bytes(c0, c1, c2, c3);
}

template <int Bits>
inline __m256i codes_of_32(const Bucketizer<Bits>& bucketizer, const float* y) {
  if constexpr (Bits <= 4) {
    return bucketizer.count ? codes_of_32(*bucketizer.count, y) : codes_of_32(*bucketizer.tree, y);
  } else {
    return codes_of_32(bucketizer.tree, y);
  }
}

// The codes of y[0 .. 32) packed into the 4 Bits bytes at `at` (quantize_and_pack_simd.inc).
template <int Bits>
inline void quantize_and_store_32(const Bucketizer<Bits>& bucketizer, const float* y, std::uint8_t* at,
                                  const std::uint8_t* end) {
  store_packed<Bits>(codes_of_32(bucketizer, y), at, end);
}

template <int Bits>
struct QuantizeToCodes {
  static void run(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
    const Bucketizer<Bits> bucketizer(codebook);
    int i = 0;
    for (; i + 32 <= n; i += 32) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + i), codes_of_32(bucketizer, y + i));
    }
    quantize_to_codes_portable(n - i, y + i, codebook, codes + i);
  }
};

#include "quant/quantize_and_pack_simd.inc"

template <int Bits>
struct UnpackAndDequantize {
  static void run(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset, const Codebook& codebook,
                  float* y) {
    const std::uint8_t* at = in + bit_offset / 8;
    const std::uint8_t* end = in + (bit_offset + count * Bits + 7) / 8;
    std::size_t i = 0;
    if constexpr (Bits <= 4) {
      const CentroidPlanes<Bits> planes(codebook);
      for (; i + 32 <= count; i += 32, at += 4 * Bits) planes.store_32(load_packed<Bits>(at, end), y + i);
    } else {
      const CentroidTable<Bits> table(codebook);
      for (; i + 32 <= count; i += 32, at += 4 * Bits) {
        const __m256i codes = load_packed<Bits>(at, end);
        const __m128i low = _mm256_castsi256_si128(codes);
        const __m128i high = _mm256_extracti128_si256(codes, 1);
        _mm256_storeu_ps(y + i, table.values_of(_mm256_cvtepu8_epi32(low)));
        _mm256_storeu_ps(y + i + 8, table.values_of(_mm256_cvtepu8_epi32(_mm_srli_si128(low, 8))));
        _mm256_storeu_ps(y + i + 16, table.values_of(_mm256_cvtepu8_epi32(high)));
        _mm256_storeu_ps(y + i + 24, table.values_of(_mm256_cvtepu8_epi32(_mm_srli_si128(high, 8))));
      }
    }
    unpack_and_dequantize_portable(count - i, in, bit_offset + i * Bits, codebook, y + i);
  }
};

}  // namespace

void row_norms_avx2(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms) {
  std::int64_t r = 0;
  // Four rows at a time: their square roots and norm_is_order_independent's
  // test in one register (the same operations on the same doubles, so the
  // same verdicts; square root and conversion to float are correctly rounded
  // in both), instead of a call and a scalar square root per row.
  const __m256d terms_plus_8 = _mm256_set1_pd(static_cast<double>(width) + 8.0);
  const __m256d ulp_factor = _mm256_set1_pd(0x1p-50);
  const __m256d half = _mm256_set1_pd(0.5);
  const __m128 largest = _mm_set1_ps(std::numeric_limits<float>::max());
  const __m128i one = _mm_set1_epi32(1);
  for (; r + 4 <= n; r += 4) {
    __m256d partials[4];
    for (int k = 0; k < 4; ++k) partials[k] = partial_sums_of_squares(width, x + (r + k) * stride);
    const __m256d sum = totals_of_four(partials);
    const __m256d root = _mm256_sqrt_pd(sum);
    const __m128 norm = _mm256_cvtpd_ps(root);
    const __m128i bits = _mm_castps_si128(norm);
    const __m256d norm_wide = _mm256_cvtps_pd(norm);
    const __m256d below =
        _mm256_mul_pd(half, _mm256_add_pd(norm_wide, _mm256_cvtps_pd(_mm_castsi128_ps(_mm_sub_epi32(bits, one)))));
    const __m256d above =
        _mm256_mul_pd(half, _mm256_add_pd(norm_wide, _mm256_cvtps_pd(_mm_castsi128_ps(_mm_add_epi32(bits, one)))));
    const __m256d margin = _mm256_mul_pd(_mm256_mul_pd(root, terms_plus_8), ulp_factor);
    const int finite = _mm_movemask_ps(_mm_cmp_ps(norm, largest, _CMP_LT_OQ));
    const int zero = _mm_movemask_ps(_mm_cmp_ps(norm, _mm_setzero_ps(), _CMP_EQ_OQ));
    const int root_zero = _mm256_movemask_pd(_mm256_cmp_pd(root, _mm256_setzero_pd(), _CMP_EQ_OQ));
    const int inside = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_sub_pd(root, margin), below, _CMP_GT_OQ)) &
                       _mm256_movemask_pd(_mm256_cmp_pd(_mm256_add_pd(root, margin), above, _CMP_LT_OQ));
    const int certified = finite & ((zero & root_zero) | (~zero & inside));
    _mm_storeu_ps(norms + r, norm);
    if (certified != 0xF) {
      for (int k = 0; k < 4; ++k) {
        if ((certified >> k & 1) == 0) norms[r + k] = vector_norm(width, x + (r + k) * stride);
      }
    }
  }
  for (; r < n; ++r) {
    const float* row = x + r * stride;
    __m256d partials[4] = {partial_sums_of_squares(width, row), _mm256_setzero_pd(), _mm256_setzero_pd(),
                           _mm256_setzero_pd()};
    const double sum = _mm256_cvtsd_f64(totals_of_four(partials));
    norms[r] = norm_is_order_independent(sum, width) ? static_cast<float>(std::sqrt(sum)) : vector_norm(width, row);
  }
}

void quantize_to_codes_avx2(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
  dispatch_bits<QuantizeToCodes>(codebook.bits, n, y, codebook, codes);
}

void quantize_and_pack_avx2(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                            std::uint64_t bit_offset) {
  dispatch_bits<QuantizeAndPack>(codebook.bits, count, y, codebook, out, bit_offset);
}

void unpack_and_dequantize_avx2(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                const Codebook& codebook, float* y) {
  dispatch_bits<UnpackAndDequantize>(codebook.bits, count, in, bit_offset, codebook, y);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
