// Which instruction-set form of the SIMD kernels runs: runtime dispatch.
//
// The library is built for the x86-64 baseline by default (TQLAB_NATIVE=OFF),
// so one binary runs on every node of a cluster. The hot kernels of the tq
// quantizer (quant/tq_kernels.h) and of the rotations (quant/rotation.h) also
// exist in AVX2+FMA and AVX-512 forms, compiled in translation units of their
// own (*_avx2.cpp, *_avx512.cpp; see core/simd_target.h for how). The CPU is
// asked once, at the first kernel call, what it supports, and every kernel
// call goes to the best form. Every form gives the same bytes and the same
// floats (tests/kernel_dispatch_test.cpp holds them to that).
//
// TQLAB_KERNELS=auto|portable|avx2|avx512 in the environment forces a form,
// so that tests and benchmarks can compare them in one binary; a name the CPU
// cannot run (or an unknown name) is an InputError at the first kernel call.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace tqlab {

/// The forms, from the most portable to the widest.
///   portable  plain C++ for the x86-64 baseline (and any other CPU);
///   avx2      AVX2 + FMA + F16C (Haswell, Zen and later);
///   avx512    AVX-512 F, BW, VL and DQ (x86-64-v4: Skylake-SP, Ice Lake,
///             Sapphire Rapids, Zen 4) where it pays, AVX2 + FMA elsewhere.
enum class KernelSet { portable, avx2, avx512 };

/// "portable", "avx2", "avx512": the words TQLAB_KERNELS accepts.
std::string_view kernel_set_name(KernelSet set);

/// Inverse of kernel_set_name; nullopt for any other word.
std::optional<KernelSet> parse_kernel_set(std::string_view name);

/// The instructions a form uses, for `tqlab --version`: "portable", "avx2+fma+f16c",
/// "avx512+avx2+fma".
std::string_view kernel_set_instructions(KernelSet set);

/// True when this CPU (and its operating system, which must save the wider
/// registers) can run `set`. portable: always.
bool cpu_supports(KernelSet set);

/// Every form this CPU can run, portable first.
std::vector<KernelSet> supported_kernel_sets();

/// The form every kernel call uses: the one TQLAB_KERNELS names if it is set
/// and not "auto", else the widest the CPU supports. Decided at the first
/// call; cheap afterwards (one relaxed atomic load). Throws InputError (at
/// every call) when TQLAB_KERNELS names an unknown form or one this CPU lacks.
KernelSet active_kernel_set();

/// Makes `set` the form every kernel call uses from now on, for tests and
/// benchmarks that compare forms in one process; returns the form that was
/// active. Throws InputError when the CPU lacks `set`. Not to be called while
/// kernels run on other threads.
KernelSet use_kernel_set(KernelSet set);

/// use_kernel_set for a scope: restores the previous form on exit.
class ScopedKernelSet {
 public:
  explicit ScopedKernelSet(KernelSet set) : previous_(use_kernel_set(set)) {}
  ~ScopedKernelSet() { use_kernel_set(previous_); }
  ScopedKernelSet(const ScopedKernelSet&) = delete;
  ScopedKernelSet& operator=(const ScopedKernelSet&) = delete;

 private:
  KernelSet previous_;
};

}  // namespace tqlab
