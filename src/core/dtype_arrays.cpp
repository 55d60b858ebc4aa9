#include "core/dtype_arrays.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype_arrays_simd.h"
#include "core/kernel_set.h"

namespace tqlab {

void floats_to_halves_reference(std::size_t n, const float* in, std::uint16_t* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_half(in[i]);
}

void halves_to_floats_reference(std::size_t n, const std::uint16_t* in, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}

void floats_to_halves(std::size_t n, const float* in, std::uint16_t* out) {
#if TQLAB_X86_KERNELS
  if (active_kernel_set() == KernelSet::avx512) return simd::floats_to_halves_avx512(n, in, out);
  if (active_kernel_set() == KernelSet::avx2) return simd::floats_to_halves_avx2(n, in, out);
#endif
  floats_to_halves_reference(n, in, out);
}

void halves_to_floats(std::size_t n, const std::uint16_t* in, float* out) {
#if TQLAB_X86_KERNELS
  if (active_kernel_set() == KernelSet::avx512) return simd::halves_to_floats_avx512(n, in, out);
  if (active_kernel_set() == KernelSet::avx2) return simd::halves_to_floats_avx2(n, in, out);
#endif
  halves_to_floats_reference(n, in, out);
}

namespace {

// Contiguous fp16 in pieces of this many values (a stack buffer of halves).
constexpr std::size_t kHalfBatch = 256;

// True when the fp16 element `bits` is Inf or NaN (all exponent bits set).
bool half_is_finite(std::uint16_t bits) { return (bits & 0x7C00u) != 0x7C00u; }

}  // namespace

std::size_t store_elements(std::size_t n, const float* values, DType dtype, std::size_t stride, void* out) {
  auto* bytes = static_cast<std::uint8_t*>(out);
  if (dtype == DType::f16 && stride == 1) {
    std::uint16_t halves[kHalfBatch];
    std::size_t first_non_finite = n;
    for (std::size_t first = 0; first < n; first += kHalfBatch) {
      const std::size_t count = std::min(kHalfBatch, n - first);
      floats_to_halves(count, values + first, halves);
      std::memcpy(bytes + 2 * first, halves, 2 * count);
      for (std::size_t i = 0; i < count && first_non_finite == n; ++i) {
        if (!half_is_finite(halves[i])) first_non_finite = first + i;
      }
    }
    return first_non_finite;
  }
  const std::size_t step = stride * dtype_size(dtype);
  std::size_t first_non_finite = n;
  for (std::size_t i = 0; i < n; ++i) {
    const float stored = store_element(values[i], dtype, bytes + i * step);
    if (first_non_finite == n && !std::isfinite(stored)) first_non_finite = i;
  }
  return first_non_finite;
}

void load_elements(std::size_t n, const void* in, DType dtype, std::size_t stride, float* values) {
  const auto* bytes = static_cast<const std::uint8_t*>(in);
  if (dtype == DType::f16 && stride == 1) {
    std::uint16_t halves[kHalfBatch];
    for (std::size_t first = 0; first < n; first += kHalfBatch) {
      const std::size_t count = std::min(kHalfBatch, n - first);
      std::memcpy(halves, bytes + 2 * first, 2 * count);
      halves_to_floats(count, halves, values + first);
    }
    return;
  }
  const std::size_t step = stride * dtype_size(dtype);
  for (std::size_t i = 0; i < n; ++i) values[i] = load_element(bytes + i * step, dtype);
}

}  // namespace tqlab
