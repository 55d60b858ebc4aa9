// The inner loops of the tq quantizer, each with a plain reference routine
// that tests hold it against (tests/tq_kernels_test.cpp).
//
// Every kernel comes in up to three forms that return the same bits:
//   name            the one callers use: the instruction-set form chosen at
//                   run time (core/kernel_set.h: AVX2+FMA or AVX-512 forms in
//                   tq_kernels_avx2.cpp / tq_kernels_avx512.cpp when the CPU
//                   has them), else the portable form;
//   name_portable   plain C++ that is still fast (word-at-a-time packing);
//   name_reference  the obvious loop, for tests only.
// Packed codes follow core/bit_pack.h: code i of a stream of b-bit codes
// occupies stream bits [i*b, (i+1)*b), least significant bit first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/codebook.h"

namespace tqlab {

/// sqrt(sum x_i^2), accumulated in double so that long vectors do not lose digits. x: n floats.
/// The squares are added in index order; every norm kernel below reproduces that order.
float vector_norm(int n, const float* x);

/// norms[r] = vector_norm(width, x + r * stride) for r in [0, n), bit for bit.
/// x: n rows of `width` floats, row r starting at x + r * stride (stride >= width);
/// norms: n floats. The SIMD forms add each row's squares in lanes and keep
/// that sum where norm_is_order_independent certifies it, else vector_norm.
void row_norms(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms);

/// Reference for row_norms: vector_norm on each row.
void row_norms_reference(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms);

/// True when vector_norm of a row of `terms` values must return
/// float(sqrt(sum)), `sum` being the same squares added in any other order
/// (SIMD lanes, several accumulators). Any two orders of adding `terms`
/// nonnegative doubles differ by at most 2 (terms - 1) 2^-53 of the sum
/// (Higham, "Accuracy and Stability of Numerical Algorithms", 2002, §4.2), so
/// the two square roots differ by about half that; when float(sqrt(sum)) lies
/// farther than (terms + 8) 2^-50 of the root (8x that bound) from the
/// midpoints to its float neighbours, both round to the same float. False also
/// for a root that is not finite or reaches the largest float. The SIMD forms
/// of row_norms take the fast sum where this holds (all but a few rows in a
/// million) and run vector_norm on the others.
bool norm_is_order_independent(double sum, int terms);

/// codes[i] = number of codebook boundaries (boundaries_f) strictly below y[i]:
/// the nearest level, a value equal to a boundary taking the lower one (as
/// Codebook::code_of does). y: n finite floats (a NaN's code differs between
/// forms), codes: n. The SIMD forms walk the implicit search tree of the
/// boundaries eight (or sixteen) values at a time, one comparison per bit; the
/// AVX2 form counts boundaries instead for symmetric codebooks of b <= 4.
void quantize_to_codes(int n, const float* y, const Codebook& codebook, std::uint8_t* codes);

/// quantize_to_codes without SIMD intrinsics: counting compares for b <= 4, a
/// branchless binary search above.
void quantize_to_codes_portable(int n, const float* y, const Codebook& codebook, std::uint8_t* codes);

/// Reference for quantize_to_codes: the definition, a full count of the
/// boundaries strictly below each y (a value on a boundary takes the lower level).
void quantize_to_codes_reference(int n, const float* y, const Codebook& codebook, std::uint8_t* codes);

/// Quantizes `count` values and writes their codes (codebook.bits bits each)
/// into the stream `out` from stream bit `bit_offset`. The destination bits
/// must be zero. y: count finite floats; out: at least
/// packed_bytes(bit_offset + count * bits, 1) bytes. Byte-aligned offsets take
/// the fast path (32 values per step); others go through pack_codes.
void quantize_and_pack(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                       std::uint64_t bit_offset);

/// quantize_and_pack without SIMD intrinsics.
void quantize_and_pack_portable(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                                std::uint64_t bit_offset);

/// Reference: quantize_to_codes_reference, then pack_codes.
void quantize_and_pack_reference(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                                 std::uint64_t bit_offset);

/// y[i] = codebook.centroids_f[code i] for `count` codes of codebook.bits bits
/// read from stream bit `bit_offset` of `in`. in: packed_bytes(bit_offset +
/// count * bits, 1) bytes; y: count floats.
void unpack_and_dequantize(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                           const Codebook& codebook, float* y);

/// unpack_and_dequantize without SIMD intrinsics.
void unpack_and_dequantize_portable(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                    const Codebook& codebook, float* y);

/// Reference: unpack_codes, then a table lookup per code.
void unpack_and_dequantize_reference(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                     const Codebook& codebook, float* y);

}  // namespace tqlab
