// Compiling kernels for an instruction set the build does not target
// (runtime dispatch, core/kernel_set.h).
//
// A kernel file (quant/tq_kernels_avx2.cpp, ...) includes every header it
// needs first, then wraps its code in a target region:
//
//   #include ...                      // all includes first
//   #if TQLAB_X86_KERNELS
//   TQLAB_TARGET_AVX2_BEGIN
//   ... kernels using AVX2, FMA and F16C intrinsics ...
//   TQLAB_TARGET_END
//   #endif
//
// Every function *defined* in the region (lambdas and templates included)
// may use the region's instructions; everything else in the program keeps
// the build's target. Why a region and not per-file flags (-mavx2 on the
// file): with per-file flags the compiler also emits the inline functions
// and templates the file instantiates from headers (std::vector's growth,
// std::sort, ...) with AVX2 instructions, as weak symbols, and the linker
// keeps one copy of each for the whole program, possibly the AVX2 one, which
// portable code on a CPU without AVX2 then calls (SIGILL). Functions defined
// before the region keep the baseline target wherever they are instantiated
// (GCC attaches the target to the definition; checked with objdump on GCC 12
// and clang 14), and are still inlined into the region's functions. Hence: no
// #include inside a region, except our own *.inc fragments that include
// nothing and define only functions of internal linkage (code_words_avx2.inc),
// so that every kernel file compiles its own copy for its own instructions.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TQLAB_X86_KERNELS 1
#else
#define TQLAB_X86_KERNELS 0
#endif

#if TQLAB_X86_KERNELS && defined(__clang__)
// _Pragma takes one string literal: stringize the whole pragma instead of
// splitting a long literal across lines.
#define TQLAB_PRAGMA(text) _Pragma(#text)
#define TQLAB_CLANG_TARGET_PUSH(features) \
  TQLAB_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define TQLAB_TARGET_AVX2_BEGIN TQLAB_CLANG_TARGET_PUSH("avx2,fma,f16c")
#define TQLAB_TARGET_AVX512_BEGIN TQLAB_CLANG_TARGET_PUSH("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")
#define TQLAB_TARGET_END _Pragma("clang attribute pop")
#elif TQLAB_X86_KERNELS
/// Opens a region for KernelSet::avx2: AVX2 + FMA + F16C.
#define TQLAB_TARGET_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c\")")
/// Opens a region for KernelSet::avx512: AVX-512 F/BW/VL/DQ with AVX2 + FMA.
#define TQLAB_TARGET_AVX512_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,avx512f,avx512bw,avx512vl,avx512dq\")")
/// Closes either region.
#define TQLAB_TARGET_END _Pragma("GCC pop_options")
#endif
