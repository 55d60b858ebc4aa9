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
// This file holds the references, the portable forms and the dispatch to the
// instruction-set form core/kernel_set.h chose (tq_kernels_simd.h). Why the
// SIMD and portable forms return the same bits (and the same as the references):
// - norms: the square of a float is exact in double (48 significant bits), so
//   a fused multiply-add of it rounds as the addition of the square does. The
//   SIMD forms add a row's squares in lanes (another order), which can move
//   the double sum by a few ulps; norm_is_order_independent certifies that
//   the float norm cannot change, and the rare rows it cannot certify go
//   through vector_norm itself.
// - bucketizing: the boundaries ascend, so "y > boundary[k]" is monotone in k
//   and the search tree finds the same count as comparing against all of them;
//   the AVX2 form's count for symmetric codebooks is that count by definition.
// - packing is integer work.
#include "quant/tq_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/bit_pack.h"
#include "core/kernel_set.h"
#include "quant/code_words.h"
#include "quant/tq_kernels_simd.h"

namespace tqlab {

using namespace code_words;

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

bool norm_is_order_independent(double sum, int terms) {
  const double root = std::sqrt(sum);
  const float norm = static_cast<float>(root);
  // NaN fails the comparison; the largest float has no finite upper midpoint.
  if (!(norm < std::numeric_limits<float>::max())) return false;
  // Squares of floats are 0 or at least 2^-298, a normal double: a zero sum
  // means every term is zero, in any order.
  if (norm == 0.0f) return root == 0.0;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(norm);
  const double below = 0.5 * (static_cast<double>(norm) + static_cast<double>(std::bit_cast<float>(bits - 1)));
  const double above = 0.5 * (static_cast<double>(norm) + static_cast<double>(std::bit_cast<float>(bits + 1)));
  const double margin = root * (static_cast<double>(terms) + 8.0) * 0x1p-50;
  return root - margin > below && root + margin < above;
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
// Dispatch: the form core/kernel_set.h chose (the SIMD forms: tq_kernels_simd.h)

void row_norms(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::row_norms_avx512(n, width, stride, x, norms);
    case KernelSet::avx2: return simd::row_norms_avx2(n, width, stride, x, norms);
#endif
    default: return row_norms_reference(n, width, stride, x, norms);
  }
}

void quantize_to_codes(int n, const float* y, const Codebook& codebook, std::uint8_t* codes) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::quantize_to_codes_avx512(n, y, codebook, codes);
    case KernelSet::avx2: return simd::quantize_to_codes_avx2(n, y, codebook, codes);
#endif
    default: return quantize_to_codes_portable(n, y, codebook, codes);
  }
}

void quantize_and_pack(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                       std::uint64_t bit_offset) {
  // The SIMD forms store whole bytes: they start on a byte boundary.
  switch (bit_offset % 8 == 0 ? active_kernel_set() : KernelSet::portable) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::quantize_and_pack_avx512(count, y, codebook, out, bit_offset);
    case KernelSet::avx2: return simd::quantize_and_pack_avx2(count, y, codebook, out, bit_offset);
#endif
    default: return quantize_and_pack_portable(count, y, codebook, out, bit_offset);
  }
}

void unpack_and_dequantize(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                           const Codebook& codebook, float* y) {
  switch (bit_offset % 8 == 0 ? active_kernel_set() : KernelSet::portable) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::unpack_and_dequantize_avx512(count, in, bit_offset, codebook, y);
    case KernelSet::avx2: return simd::unpack_and_dequantize_avx2(count, in, bit_offset, codebook, y);
#endif
    default: return unpack_and_dequantize_portable(count, in, bit_offset, codebook, y);
  }
}

}  // namespace tqlab
