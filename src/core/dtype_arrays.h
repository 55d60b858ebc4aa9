// store_element / load_element on arrays: the norms of a whole chunk of
// vectors at once (quant/tq_group_codec.cpp), instead of one call, one switch
// on the type and one conversion per value.
//
// Every function here gives the bits of the element-wise functions of
// core/dtype.h, for every kernel set (core/kernel_set.h). The fp16
// conversions run sixteen values per instruction (vcvtps2ph / vcvtph2ps)
// under KernelSet::avx512 (dtype_arrays_avx512.cpp), eight under
// KernelSet::avx2 (F16C, dtype_arrays_avx2.cpp), a plain loop otherwise;
// tests/dtype_arrays_test.cpp holds them to float_to_half / half_to_float.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace tqlab {

/// store_element(values[i], dtype, element i) for i < n, element i at byte
/// out + i * stride * dtype_size(dtype) (stride >= 1, in elements). Returns
/// the index of the first value whose stored element is not finite (the value
/// is Inf or NaN, or beyond the type's range), or n when every one is finite.
/// values: n floats. Integer and bool types: InternalError, as store_element.
std::size_t store_elements(std::size_t n, const float* values, DType dtype, std::size_t stride, void* out);

/// values[i] = load_element(element i, dtype) for i < n, element i at byte
/// in + i * stride * dtype_size(dtype) (stride >= 1, in elements). values: n floats.
void load_elements(std::size_t n, const void* in, DType dtype, std::size_t stride, float* values);

/// out[i] = float_to_half(in[i]) for i < n, bit for bit (round to nearest
/// even, subnormals, overflow to +-Inf, NaN kept quiet with its top payload bits).
void floats_to_halves(std::size_t n, const float* in, std::uint16_t* out);

/// out[i] = half_to_float(in[i]) for i < n, bit for bit (NaN payloads as they are).
void halves_to_floats(std::size_t n, const std::uint16_t* in, float* out);

/// The plain loops floats_to_halves and halves_to_floats dispatch to without
/// AVX2 or AVX-512: the references tests hold the fast forms to.
void floats_to_halves_reference(std::size_t n, const float* in, std::uint16_t* out);
void halves_to_floats_reference(std::size_t n, const std::uint16_t* in, float* out);

}  // namespace tqlab
