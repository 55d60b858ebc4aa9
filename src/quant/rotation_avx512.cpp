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

using rotation_kernels::HadamardRows;

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
  static Type zero() { return _mm512_setzero_ps(); }
  static Type fmadd(Type a, Type b, Type c) { return _mm512_fmadd_ps(a, b, c); }
  static bool all_finite(Type poison) { return _mm512_cmp_ps_mask(poison, poison, _CMP_UNORD_Q) == 0; }
  // +1 in the lanes of `lanes`' clear bits, -1 in its set bits.
  static Type signs(__mmask16 negative) {
    return _mm512_mask_blend_ps(negative, _mm512_set1_ps(1.0f), _mm512_set1_ps(-1.0f));
  }
  // Each stage: v * (+1 or -1) + partner in one fused multiply-add (exact
  // product): partner + v in the lanes that take a sum, partner - v in the
  // upper partner of each pair.
  static Type butterflies_within_register(Type v) {
    v = _mm512_fmadd_ps(v, signs(0xAAAA), _mm512_permute_ps(v, 0b10'11'00'01));
    v = _mm512_fmadd_ps(v, signs(0xCCCC), _mm512_permute_ps(v, 0b01'00'11'10));
    v = _mm512_fmadd_ps(v, signs(0xF0F0), _mm512_shuffle_f32x4(v, v, 0b10'11'00'01));
    return _mm512_fmadd_ps(v, signs(0xFF00), _mm512_shuffle_f32x4(v, v, 0b01'00'11'10));
  }
};

#include "quant/fwht_in_registers.inc"

}  // namespace

bool hadamard_rows_avx512(int log_n, const rotation_kernels::HadamardRows& rows) {
  switch (log_n) {
    case 4: return hadamard_rows_in_registers<Avx512Floats, 4>(rows);
    case 5: return hadamard_rows_in_registers<Avx512Floats, 5>(rows);
    case 6: return hadamard_rows_in_registers<Avx512Floats, 6>(rows);
    case 7: return hadamard_rows_in_registers<Avx512Floats, 7>(rows);
    case 8: return hadamard_rows_in_registers<Avx512Floats, 8>(rows);
  }
  assert(false && "log_n outside the AVX-512 register kernel's range");
  return false;
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
