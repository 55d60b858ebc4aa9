// The AVX2 + FMA forms of the tq kernels (tq_kernels.h), chosen at run time
// by tq_kernels.cpp when the CPU has them (core/kernel_set.h). Compiled in a
// target region (core/simd_target.h): every #include comes before it.
//
// They return the same bits as the portable forms (tq_kernels.cpp says why);
// tests/kernel_dispatch_test.cpp runs every form on the same inputs.
#include "quant/tq_kernels_simd.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/simd_intrinsics.h"
#include "quant/code_words.h"
#include "quant/tq_kernels.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX2_BEGIN

namespace tqlab::simd {
namespace {

using namespace code_words;

#include "quant/code_words_avx2.inc"

// ---------------------------------------------------------------------------
// Norms


// The sum of one row's squares in four accumulators of four lanes (an order
// of additions of its own; row_norms_avx2 certifies the result). Columns past
// the last multiple of four are added one by one.
inline double sum_of_squares(int width, const float* x) {
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
  const __m256d total = _mm256_add_pd(_mm256_add_pd(sums[0], sums[1]), _mm256_add_pd(sums[2], sums[3]));
  const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(total), _mm256_extractf128_pd(total, 1));
  double sum = _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
  for (; column < width; ++column) sum += static_cast<double>(x[column]) * x[column];
  return sum;
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

// The 32 codes of y[0 .. 32) as 32 bytes in order.
template <int Bits>
inline __m256i codes_of_32(const SearchTree<Bits>& tree, const float* y) {
  const __m256i c0 = tree.codes_of(_mm256_loadu_ps(y));
  const __m256i c1 = tree.codes_of(_mm256_loadu_ps(y + 8));
  const __m256i c2 = tree.codes_of(_mm256_loadu_ps(y + 16));
  const __m256i c3 = tree.codes_of(_mm256_loadu_ps(y + 24));
  return codes_to_bytes(c0, c1, c2, c3);
}

// The codes of y[0 .. 32) packed into the 4 Bits bytes at `at` (quantize_and_pack_simd.inc).
template <int Bits>
inline void quantize_and_store_32(const SearchTree<Bits>& tree, const float* y, std::uint8_t* at,
                                  const std::uint8_t* end) {
  store_packed<Bits>(codes_of_32(tree, y), at, end);
}

template <int Bits>
struct QuantizeToCodes {
  static void run(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
    const SearchTree<Bits> tree(codebook);
    int i = 0;
    for (; i + 32 <= n; i += 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + i), codes_of_32(tree, y + i));
    quantize_to_codes_portable(n - i, y + i, codebook, codes + i);
  }
};

#include "quant/quantize_and_pack_simd.inc"

template <int Bits>
struct UnpackAndDequantize {
  static void run(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset, const Codebook& codebook,
                  float* y) {
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
};

}  // namespace

void row_norms_avx2(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms) {
  for (std::int64_t r = 0; r < n; ++r) {
    const float* row = x + r * stride;
    const double sum = sum_of_squares(width, row);
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
