// The AVX-512 form of the Hadamard rotation's in-register transform
// (rotation_simd.h), 16 floats per register, for 16 ... 256 floats: a head dim
// of 128 is eight registers instead of sixteen, and four of its seven
// butterfly stages stay inside a register. Other sizes, the in-memory
// transform and the Haar product keep their AVX2 + FMA forms. Compiled in a
// target region (core/simd_target.h): every #include comes before it.
#include "quant/rotation_simd.h"

#include <cassert>
#include <cstdint>

#include "core/simd_intrinsics.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX512_BEGIN

namespace tqlab::simd {
namespace {

// Sixteen floats per register (fwht_in_registers.inc). Spans 1, 2, 4 and 8
// stay inside one register: move the partner into place, negate the lanes
// that take a difference (the upper partner of each pair), add.
struct Avx512Floats {
  using Type = __m512;
  static constexpr int kWidth = 16;
  static Type load(const float* at) { return _mm512_loadu_ps(at); }
  static void store(float* at, Type v) { _mm512_storeu_ps(at, v); }
  static Type add(Type a, Type b) { return _mm512_add_ps(a, b); }
  static Type sub(Type a, Type b) { return _mm512_sub_ps(a, b); }
  static Type mul(Type a, Type b) { return _mm512_mul_ps(a, b); }
  static Type broadcast(float value) { return _mm512_set1_ps(value); }
  static Type negate_lanes(Type v, __mmask16 lanes) {
    const __m512i bits = _mm512_castps_si512(v);
    return _mm512_castsi512_ps(_mm512_mask_xor_epi32(bits, lanes, bits, _mm512_set1_epi32(INT32_MIN)));
  }
  static Type butterflies_within_register(Type v) {
    v = _mm512_add_ps(_mm512_permute_ps(v, 0b10'11'00'01), negate_lanes(v, 0xAAAA));
    v = _mm512_add_ps(_mm512_permute_ps(v, 0b01'00'11'10), negate_lanes(v, 0xCCCC));
    v = _mm512_add_ps(_mm512_shuffle_f32x4(v, v, 0b10'11'00'01), negate_lanes(v, 0xF0F0));
    return _mm512_add_ps(_mm512_shuffle_f32x4(v, v, 0b01'00'11'10), negate_lanes(v, 0xFF00));
  }
};

#include "quant/fwht_in_registers.inc"

}  // namespace

void hadamard_rows_avx512(std::int64_t n, int log_n, const float* pre_signs, const float* post_signs,
                          const float* in, float* out) {
  switch (log_n) {
    case 4: return hadamard_rows_in_registers<Avx512Floats, 4>(n, pre_signs, post_signs, in, out);
    case 5: return hadamard_rows_in_registers<Avx512Floats, 5>(n, pre_signs, post_signs, in, out);
    case 6: return hadamard_rows_in_registers<Avx512Floats, 6>(n, pre_signs, post_signs, in, out);
    case 7: return hadamard_rows_in_registers<Avx512Floats, 7>(n, pre_signs, post_signs, in, out);
    case 8: return hadamard_rows_in_registers<Avx512Floats, 8>(n, pre_signs, post_signs, in, out);
  }
  assert(false && "log_n outside the AVX-512 register kernel's range");
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
