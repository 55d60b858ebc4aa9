// The AVX-512 forms of the tq kernels' bucketizing and centroid lookup
// (tq_kernels.h), sixteen values per register. Where the AVX2 forms need two
// permutes and a blend (16 candidates) or a gather (more), AVX-512 looks a
// value up among 16 table entries with one permute, among 32 with one
// two-register permute, and among 64 or 128 with a few of those and mask
// blends: the search tree has no gathers at any bit width (the centroid
// lookup keeps one at b >= 7, as fast here as a chain of 8 or 16 permutes).
// The packing of the codes is the AVX2 one (code_words_avx2.inc) except at
// b = 4 (quantize_and_store_32). row_norms sums eight doubles per register.
// Compiled in a target region (core/simd_target.h): every #include comes
// before it.
//
// The same bits as the portable forms: the boundaries ascend, so walking the
// search tree with "y > boundary" counts the boundaries below y as the
// portable forms do; a lookup returns the table entry itself.
#include "quant/tq_kernels_simd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "core/simd_intrinsics.h"
#include "quant/code_words.h"
#include "quant/tq_kernels.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX512_BEGIN

namespace tqlab::simd {
namespace {

using namespace code_words;

#include "quant/code_words_avx2.inc"

// table[index] in each of the 16 int32 lanes, for a table of 16 * Registers
// floats held in `Registers` registers (entry j at lane j % 16 of register
// j / 16), 0 <= index < 16 * Registers. One register: one permute. More:
// each pair of registers is a 32-entry two-register permute on the index's
// low 5 bits, and bits 5, 6, 7 of the index choose among the pairs' results.
// picks[0 .. Count) narrowed to one by index bits Bit, Bit + 1, ...: each
// step keeps, per lane, the upper of each pair where the lane's bit is set.
template <int Count, int Bit>
inline __m512 choose_by_bits(__m512* picks, __m512i index) {
  if constexpr (Count == 1) {
    return picks[0];
  } else {
    const __mmask16 upper = _mm512_test_epi32_mask(index, _mm512_set1_epi32(1 << Bit));
    for (int q = 0; q < Count / 2; ++q) picks[q] = _mm512_mask_blend_ps(upper, picks[2 * q], picks[2 * q + 1]);
    return choose_by_bits<Count / 2, Bit + 1>(picks, index);
  }
}

template <int Registers>
inline __m512 lookup(const __m512* table, __m512i index) {
  if constexpr (Registers == 1) {
    return _mm512_permutexvar_ps(index, table[0]);
  } else {
    __m512 picks[Registers / 2];
    for (int p = 0; p < Registers / 2; ++p) picks[p] = _mm512_permutex2var_ps(table[2 * p], index, table[2 * p + 1]);
    return choose_by_bits<Registers / 2, 5>(picks, index);
  }
}

// Registers that hold `entries` floats (at least one).
constexpr int registers_for(int entries) { return entries <= 16 ? 1 : entries / 16; }

// `count` floats into registers of 16, the unused lanes zero.
template <int Registers>
void load_table(const float* values, int count, __m512* table) {
  alignas(64) float padded[16 * Registers] = {};
  std::copy_n(values, count, padded);
  for (int r = 0; r < Registers; ++r) table[r] = _mm512_load_ps(padded + 16 * r);
}

// One row's squares added in four accumulators of eight lanes, then lane by
// lane: eight partial sums whose total is the row's sum in an order of its
// own (the AVX2 form's certificate covers any order: row_norms_avx512). The
// columns past the last multiple of eight come in one masked load, zeros elsewhere.
inline __m512d partial_sums_of_squares(int width, const float* x) {
  __m512d sums[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
  int column = 0;
  for (; column + 32 <= width; column += 32) {
    for (int a = 0; a < 4; ++a) {
      const __m512d values = _mm512_cvtps_pd(_mm256_loadu_ps(x + column + 8 * a));
      sums[a] = _mm512_fmadd_pd(values, values, sums[a]);
    }
  }
  for (; column + 8 <= width; column += 8) {
    const __m512d values = _mm512_cvtps_pd(_mm256_loadu_ps(x + column));
    sums[0] = _mm512_fmadd_pd(values, values, sums[0]);
  }
  if (column < width) {
    const auto lanes = static_cast<__mmask8>((1u << (width - column)) - 1);
    const __m512d values = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(lanes, x + column));
    sums[1] = _mm512_fmadd_pd(values, values, sums[1]);
  }
  return _mm512_add_pd(_mm512_add_pd(sums[0], sums[1]), _mm512_add_pd(sums[2], sums[3]));
}

// Lane k of the result: the total of partials[k]'s eight lanes. A transpose
// by halves (pairs of lanes, then 128-bit and 256-bit blocks), 21 operations
// for eight rows where a reduction per row takes 6 each, and no round trip
// of the eight sums through memory.
inline __m512d totals_of_eight(const __m512d* partials) {
  __m512d pairs[4];  // pairs[q], 128-bit block j: lanes 2j, 2j+1 of rows 2q, 2q+1 added, row 2q first
  for (int q = 0; q < 4; ++q) {
    pairs[q] = _mm512_add_pd(_mm512_unpacklo_pd(partials[2 * q], partials[2 * q + 1]),
                             _mm512_unpackhi_pd(partials[2 * q], partials[2 * q + 1]));
  }
  __m512d quads[2];  // quads[h], 128-bit block j: rows 4h + 2(j / 2) ... + 1, half j % 2 of their lanes
  for (int h = 0; h < 2; ++h) {
    quads[h] = _mm512_add_pd(_mm512_shuffle_f64x2(pairs[2 * h], pairs[2 * h + 1], 0b10'00'10'00),
                             _mm512_shuffle_f64x2(pairs[2 * h], pairs[2 * h + 1], 0b11'01'11'01));
  }
  return _mm512_add_pd(_mm512_shuffle_f64x2(quads[0], quads[1], 0b10'00'10'00),
                       _mm512_shuffle_f64x2(quads[0], quads[1], 0b11'01'11'01));
}

// The implicit search tree of 2^Bits - 1 ascending boundaries, as the AVX2
// form walks it (tq_kernels_avx2.cpp): level k compares with the boundary
// just below the upper half of the range the code's top k bits leave,
// boundary[(2 prefix + 1) 2^(Bits-k-1) - 1] for top bits `prefix`.
//
// Port 5 bounds this loop (compares into masks and permutes run only there),
// so for Bits <= 4, where a 16-entry table holds any level, the walk keeps
// the code itself: after level k its top k bits are set and the rest zero,
// level k's table is indexed by that partial code (one permute, no shift),
// and the level's bit is one masked OR. Level 0 compares with one boundary
// and level 1 picks one of two by level 0's mask, without a permute. Deeper
// trees index compact per-level tables by the prefix (one to eight registers).
template <int Bits>
struct SearchTree {
  static constexpr bool kSmall = Bits <= 4;
  __m512 candidates[Bits][registers_for(kSmall ? 1 : 1 << (Bits - 1))];

  explicit SearchTree(const Codebook& codebook) {
    const float* boundaries = codebook.boundaries_f.data();
    [&]<int... Level>(std::integer_sequence<int, Level...>) {
      (load_level<Level>(boundaries), ...);
    }(std::make_integer_sequence<int, Bits>{});
  }

  template <int Level>
  void load_level(const float* boundaries) {
    constexpr int kHalf = 1 << (Bits - Level - 1);
    if constexpr (kSmall) {
      if constexpr (Level == 0) {
        candidates[0][0] = _mm512_set1_ps(boundaries[kHalf - 1]);
      } else if constexpr (Level == 1) {
        candidates[1][0] = _mm512_set1_ps(boundaries[kHalf - 1]);
        upper_of_level_1 = _mm512_set1_ps(boundaries[3 * kHalf - 1]);
      } else {
        // Entry `code` (top Level bits set, the rest zero) of a 16-entry
        // table; entries no partial code reaches stay zero.
        alignas(64) float level[16] = {};
        for (int code = 0; code < (1 << Bits); code += 2 * kHalf) level[code] = boundaries[code + kHalf - 1];
        candidates[Level][0] = _mm512_load_ps(level);
      }
    } else {
      float level[1 << Level];
      for (int j = 0; j < (1 << Level); ++j) level[j] = boundaries[(2 * j + 1) * kHalf - 1];
      load_table<registers_for(1 << Level)>(level, 1 << Level, candidates[Level]);
    }
  }

  // Codes of sixteen values, one per int32 lane.
  __m512i codes_of(__m512 y) const {
    if constexpr (kSmall) {
      __mmask16 above = _mm512_cmp_ps_mask(y, candidates[0][0], _CMP_GT_OQ);
      __m512i code = _mm512_maskz_mov_epi32(above, _mm512_set1_epi32(1 << (Bits - 1)));
      if constexpr (Bits >= 2) {
        const __m512 threshold = _mm512_mask_blend_ps(above, candidates[1][0], upper_of_level_1);
        above = _mm512_cmp_ps_mask(y, threshold, _CMP_GT_OQ);
        code = _mm512_mask_or_epi32(code, above, code, _mm512_set1_epi32(1 << (Bits - 2)));
      }
#pragma GCC unroll 4
      for (int level = 2; level < Bits; ++level) {
        const __m512 threshold = _mm512_permutexvar_ps(code, candidates[level][0]);
        above = _mm512_cmp_ps_mask(y, threshold, _CMP_GT_OQ);
        code = _mm512_mask_or_epi32(code, above, code, _mm512_set1_epi32(1 << (Bits - 1 - level)));
      }
      return code;
    } else {
      __m512i prefix = _mm512_setzero_si512();
      [&]<int... Level>(std::integer_sequence<int, Level...>) {
        (descend<Level>(y, prefix), ...);
      }(std::make_integer_sequence<int, Bits>{});
      return prefix;
    }
  }

  // One level of a deep tree: prefix = 2 prefix + (y above the candidate).
  template <int Level>
  void descend(__m512 y, __m512i& prefix) const {
    const __m512 threshold = lookup<registers_for(1 << Level)>(candidates[Level], prefix);
    const __mmask16 above = _mm512_cmp_ps_mask(y, threshold, _CMP_GT_OQ);
    const __m512i doubled = _mm512_add_epi32(prefix, prefix);
    prefix = _mm512_mask_add_epi32(doubled, above, doubled, _mm512_set1_epi32(1));
  }

  __m512 upper_of_level_1 = _mm512_setzero_ps();  // small trees: level 1's candidate above level 0's boundary
};

// quantize_and_pack_simd.inc's bucketizer: the search tree at every width.
template <int Bits>
using Bucketizer = SearchTree<Bits>;

// The 32 codes of y[0 .. 32) as 32 bytes in order.
template <int Bits>
inline __m256i codes_of_32(const SearchTree<Bits>& tree, const float* y) {
  const __m128i low = _mm512_cvtepi32_epi8(tree.codes_of(_mm512_loadu_ps(y)));
  const __m128i high = _mm512_cvtepi32_epi8(tree.codes_of(_mm512_loadu_ps(y + 16)));
  return _mm256_set_m128i(high, low);
}

// The codes of y[0 .. 32) packed into the 4 Bits bytes at `at` (quantize_and_pack_simd.inc).
// b = 4 narrows without the byte shuffles of codes_of_32 and store_packed (port 5
// again): in each 64-bit lane of codes, code 2k | code 2k+1 << 4 is formed in the
// low byte, which vpmovqb keeps.
template <int Bits>
inline void quantize_and_store_32(const SearchTree<Bits>& tree, const float* y, std::uint8_t* at,
                                  const std::uint8_t* end) {
  if constexpr (Bits == 4) {
    for (int half = 0; half < 2; ++half) {
      const __m512i codes = tree.codes_of(_mm512_loadu_ps(y + 16 * half));
      const __m512i pairs = _mm512_or_si512(codes, _mm512_srli_epi64(codes, 28));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(at + 8 * half), _mm512_cvtepi64_epi8(pairs));
    }
  } else {
    store_packed<Bits>(codes_of_32(tree, y), at, end);
  }
}

template <int Bits>
struct QuantizeToCodes {
  static void run(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
    const SearchTree<Bits> tree(codebook);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i),
                       _mm512_cvtepi32_epi8(tree.codes_of(_mm512_loadu_ps(y + i))));
    }
    quantize_to_codes_portable(n - i, y + i, codebook, codes + i);
  }
};

#include "quant/quantize_and_pack_simd.inc"

template <int Bits>
struct UnpackAndDequantize {
  static void run(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset, const Codebook& codebook,
                  float* y) {
    constexpr int kRegisters = registers_for(1 << Bits);
    __m512 centroids[kRegisters];
    load_table<kRegisters>(codebook.centroids_f.data(), 1 << Bits, centroids);
    const std::uint8_t* at = in + bit_offset / 8;
    const std::uint8_t* end = in + (bit_offset + count * Bits + 7) / 8;
    std::size_t i = 0;
    for (; i + 32 <= count; i += 32, at += 4 * Bits) {
      const __m256i codes = load_packed<Bits>(at, end);
      const __m512i low = _mm512_cvtepu8_epi32(_mm256_castsi256_si128(codes));
      const __m512i high = _mm512_cvtepu8_epi32(_mm256_extracti128_si256(codes, 1));
      if constexpr (Bits >= 7) {
        _mm512_storeu_ps(y + i, _mm512_i32gather_ps(low, codebook.centroids_f.data(), 4));
        _mm512_storeu_ps(y + i + 16, _mm512_i32gather_ps(high, codebook.centroids_f.data(), 4));
      } else {
        _mm512_storeu_ps(y + i, lookup<kRegisters>(centroids, low));
        _mm512_storeu_ps(y + i + 16, lookup<kRegisters>(centroids, high));
      }
    }
    unpack_and_dequantize_portable(count - i, in, bit_offset + i * Bits, codebook, y + i);
  }
};

}  // namespace

void row_norms_avx512(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms) {
  std::int64_t r = 0;
  // Eight rows at a time: their square roots and norm_is_order_independent's
  // test in one register (the same operations on the same doubles, so the
  // same verdicts; square root and conversion to float are correctly rounded
  // in both), instead of a call and a scalar square root per row.
  const __m512d terms_plus_8 = _mm512_set1_pd(static_cast<double>(width) + 8.0);
  const __m512d ulp_factor = _mm512_set1_pd(0x1p-50);
  const __m512d half = _mm512_set1_pd(0.5);
  const __m256 largest = _mm256_set1_ps(std::numeric_limits<float>::max());
  const __m256i one = _mm256_set1_epi32(1);
  for (; r + 8 <= n; r += 8) {
    __m512d partials[8];
    for (int k = 0; k < 8; ++k) partials[k] = partial_sums_of_squares(width, x + (r + k) * stride);
    const __m512d sum = totals_of_eight(partials);
    const __m512d root = _mm512_sqrt_pd(sum);
    const __m256 norm = _mm512_cvtpd_ps(root);
    const __m256i bits = _mm256_castps_si256(norm);
    const __m512d below = _mm512_mul_pd(
        half, _mm512_add_pd(_mm512_cvtps_pd(norm), _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_sub_epi32(bits, one)))));
    const __m512d above = _mm512_mul_pd(
        half, _mm512_add_pd(_mm512_cvtps_pd(norm), _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_add_epi32(bits, one)))));
    const __m512d margin = _mm512_mul_pd(_mm512_mul_pd(root, terms_plus_8), ulp_factor);
    const __mmask8 finite = _mm256_cmp_ps_mask(norm, largest, _CMP_LT_OQ);
    const __mmask8 zero = _mm256_cmp_ps_mask(norm, _mm256_setzero_ps(), _CMP_EQ_OQ);
    const __mmask8 root_zero = _mm512_cmp_pd_mask(root, _mm512_setzero_pd(), _CMP_EQ_OQ);
    const __mmask8 inside = _mm512_cmp_pd_mask(_mm512_sub_pd(root, margin), below, _CMP_GT_OQ) &
                            _mm512_cmp_pd_mask(_mm512_add_pd(root, margin), above, _CMP_LT_OQ);
    const auto certified = static_cast<unsigned>(finite & ((zero & root_zero) | (~zero & inside)));
    _mm256_storeu_ps(norms + r, norm);
    if (certified != 0xFFu) {
      for (int k = 0; k < 8; ++k) {
        if ((certified >> k & 1u) == 0) norms[r + k] = vector_norm(width, x + (r + k) * stride);
      }
    }
  }
  for (; r < n; ++r) {
    const float* row = x + r * stride;
    const double sum = _mm512_reduce_add_pd(partial_sums_of_squares(width, row));
    norms[r] = norm_is_order_independent(sum, width) ? static_cast<float>(std::sqrt(sum)) : vector_norm(width, row);
  }
}

void quantize_to_codes_avx512(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
  dispatch_bits<QuantizeToCodes>(codebook.bits, n, y, codebook, codes);
}

void quantize_and_pack_avx512(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                              std::uint64_t bit_offset) {
  dispatch_bits<QuantizeAndPack>(codebook.bits, count, y, codebook, out, bit_offset);
}

void unpack_and_dequantize_avx512(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                  const Codebook& codebook, float* y) {
  dispatch_bits<UnpackAndDequantize>(codebook.bits, count, in, bit_offset, codebook, y);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
