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

/// A batch of rows for the in-register Hadamard kernels:
///   out_r = post_scales[r] * (post_signs ∘ fwht_normalized(pre_signs ∘ (pre_scales[r] * in_r)))
/// for r < n, each step one rounded float product per value (exact for the
/// signs) and skipped when its pointer is null. in_r starts at in + r *
/// in_stride, out_r at out + r * out_stride (2^log_n floats each); signs:
/// 2^log_n values of +-1; scales: n floats. in == out with equal strides is
/// allowed, other overlaps are not.
struct HadamardRows {
  std::int64_t n = 0;
  const float* in = nullptr;
  std::int64_t in_stride = 0;
  const float* pre_scales = nullptr;
  const float* pre_signs = nullptr;
  const float* post_signs = nullptr;
  const float* post_scales = nullptr;
  float* out = nullptr;
  std::int64_t out_stride = 0;
};

}  // namespace rotation_kernels

namespace simd {

#if TQLAB_X86_KERNELS
/// fwht_normalized (rotation.h) for 3 <= log_n <= 30.
void fwht_normalized_avx2(float* x, int log_n);

/// The rows of `rows` (rotation_kernels::HadamardRows) for kMinLogInRegisters
/// <= log_n <= kMaxLogInRegisters. Returns false when some result is not
/// finite (checked only with post_scales; true without).
bool hadamard_rows_avx2(int log_n, const rotation_kernels::HadamardRows& rows);

/// out_r = Σ_k in_r[k] * rows(k, :) for each of n rows, every element
/// accumulated over k = 0 .. dim-1 by fused multiply-adds (rotation.cpp's
/// multiply_by_rows_portable, bit for bit). rows: dim x dim row-major; in,
/// out: n x dim; in == out is allowed.
void multiply_by_rows_avx2(std::int64_t n, int dim, const float* rows, const float* in, float* out);

/// hadamard_rows_avx2 for kMinLogInRegistersAvx512 <= log_n <= kMaxLogInRegistersAvx512.
bool hadamard_rows_avx512(int log_n, const rotation_kernels::HadamardRows& rows);
#endif

}  // namespace simd
}  // namespace tqlab
