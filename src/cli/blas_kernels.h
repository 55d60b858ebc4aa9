// OpenBLAS chooses its kernels once, when the library loads, from the CPU it
// recognizes. Debian 12's OpenBLAS 0.3.21 does not recognize recent CPUs
// (Sapphire/Emerald Rapids under KVM among them) and falls back to its SSE3
// "Prescott" kernels, several times slower. And kernels differ between CPUs
// in their summation order, so the same sweep would give different last
// digits on an AVX-512 Xeon and an AVX2 EPYC.
//
// So tqlab asks for the Haswell (AVX2 + FMA) kernels on every CPU that has
// AVX2 and FMA: fast everywhere, and the same sgemm bits on every such
// machine. The only way to choose is the OPENBLAS_CORETYPE environment
// variable, read at load time, so the process starts itself again with it
// set, and OPENBLAS_NUM_THREADS=1 (tqlab's own workers call BLAS, one thread
// each, so OpenBLAS's pool would only idle beside them). A user's own
// OPENBLAS_CORETYPE is left alone, and with it the whole environment.
#pragma once

namespace tqlab::cli {

/// Re-executes the program with OPENBLAS_CORETYPE=Haswell when the CPU has
/// AVX2 and FMA, the variable is unset, and this process did not already do
/// so. Returns normally when nothing needs doing or exec fails.
void pin_blas_kernels(char** argv);

}  // namespace tqlab::cli
