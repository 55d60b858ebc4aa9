// The instruction-set forms of the rotation kernels (rotation.h), internal to
// rotation.cpp, which calls the one core/kernel_set.h chooses. Each form gives
// the same bits as the portable code in rotation.cpp (the comments at each
// form say why); the caller has checked that the CPU supports it.
//   *_avx2    AVX2 + FMA (rotation_avx2.cpp)
//   *_avx512  AVX-512    (rotation_avx512.cpp)
#pragma once

#include <bit>
#include <cstdint>

#include "core/simd_target.h"

namespace tqlab {
namespace rotation_kernels {

// 1 / sqrt(2^log_n) as a float, without a sqrt and divide on every call:
// 2^-(log_n/2) is built from its exponent bits, and for odd log_n it is scaled
// by sqrt(1/2) rounded to float; multiplying by a power of two is exact, so the
// result equals float(1 / sqrt(2^log_n)) correctly rounded.
inline float fwht_scale(int log_n) {
  const auto exponent_bits = static_cast<std::uint32_t>(127 - log_n / 2) << 23;
  const float power_of_two = std::bit_cast<float>(exponent_bits);
  constexpr float kSqrtHalf = 0x1.6a09e6p-1f;  // sqrt(0.5) rounded to nearest float
  return (log_n % 2 != 0) ? power_of_two * kSqrtHalf : power_of_two;
}

/// Sizes the in-register Hadamard kernels handle: AVX2 2^3 = 8 ... 2^7 = 128
/// floats, AVX-512 2^4 = 16 ... 2^8 = 256 floats.
inline constexpr int kMinLogInRegisters = 3;
inline constexpr int kMaxLogInRegisters = 7;
inline constexpr int kMinLogInRegistersAvx512 = 4;
inline constexpr int kMaxLogInRegistersAvx512 = 8;

}  // namespace rotation_kernels

namespace simd {

#if TQLAB_X86_KERNELS
/// fwht_normalized (rotation.h) for 3 <= log_n <= 30.
void fwht_normalized_avx2(float* x, int log_n);

/// n rows of 2^log_n floats, kMinLogInRegisters <= log_n <= kMaxLogInRegisters:
/// out_r = post_signs ∘ fwht_normalized(pre_signs ∘ in_r); either sign vector
/// (2^log_n values of ±1) may be null for none. in: n * 2^log_n floats, out the
/// same; in == out is allowed.
void hadamard_rows_avx2(std::int64_t n, int log_n, const float* pre_signs, const float* post_signs, const float* in,
                        float* out);

/// out_r = Σ_k in_r[k] * rows(k, :) for each of n rows, every element
/// accumulated over k = 0 .. dim-1 by fused multiply-adds (rotation.cpp's
/// multiply_by_rows_portable, bit for bit). rows: dim x dim row-major; in,
/// out: n x dim; in == out is allowed.
void multiply_by_rows_avx2(std::int64_t n, int dim, const float* rows, const float* in, float* out);

/// hadamard_rows_avx2 for kMinLogInRegistersAvx512 <= log_n <= kMaxLogInRegistersAvx512.
void hadamard_rows_avx512(std::int64_t n, int log_n, const float* pre_signs, const float* post_signs,
                          const float* in, float* out);
#endif

}  // namespace simd
}  // namespace tqlab
