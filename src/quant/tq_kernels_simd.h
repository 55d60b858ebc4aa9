// The instruction-set forms of the tq kernels (tq_kernels.h), internal to
// the kernels: tq_kernels.cpp calls the one core/kernel_set.h chooses.
// Each form has the contract, shapes and results of the public kernel of the
// same name (tq_kernels.h), bit for bit; the caller has checked that the CPU
// supports the form, and calls the packing forms only with a bit_offset that
// is a multiple of 8 (32 codes then fill whole bytes; other offsets take the
// portable forms). They exist only when TQLAB_X86_KERNELS is 1.
//   *_avx2    AVX2 + FMA   (tq_kernels_avx2.cpp)
//   *_avx512  AVX-512      (tq_kernels_avx512.cpp)
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>

#include "core/simd_target.h"
#include "quant/codebook.h"

namespace tqlab::simd {

#if TQLAB_X86_KERNELS
void row_norms_avx2(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms);
void quantize_to_codes_avx2(int n, const float* y, const Codebook& codebook, std::uint8_t* codes);
void quantize_and_pack_avx2(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                            std::uint64_t bit_offset);
void unpack_and_dequantize_avx2(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                const Codebook& codebook, float* y);

void row_norms_avx512(std::int64_t n, int width, std::int64_t stride, const float* x, float* norms);
void quantize_to_codes_avx512(int n, const float* y, const Codebook& codebook, std::uint8_t* codes);
void quantize_and_pack_avx512(std::size_t count, const float* y, const Codebook& codebook, std::uint8_t* out,
                              std::uint64_t bit_offset);
void unpack_and_dequantize_avx512(std::size_t count, const std::uint8_t* in, std::uint64_t bit_offset,
                                  const Codebook& codebook, float* y);
#endif

/// Calls Kernel<bits>::run(args...) for bits = 1..8: the kernels specialize
/// on the code width at compile time.
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

}  // namespace tqlab::simd
