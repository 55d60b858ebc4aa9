// <immintrin.h> for the SIMD kernel files (core/simd_target.h), with GCC 12's
// false -Wuninitialized / -Wmaybe-uninitialized inside its own AVX-512
// intrinsics (their deliberately undefined merge operands, GCC bug 105593)
// silenced for the intrinsics' own lines only: the warnings are reported at
// those lines, which lie between the push and the pop below.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
