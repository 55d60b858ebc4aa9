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

#include "quant/float_lanes_avx512.inc"

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
