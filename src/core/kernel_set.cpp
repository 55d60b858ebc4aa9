// Runtime choice of the kernels' instruction set (see kernel_set.h).
#include "core/kernel_set.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/name_table.h"
#include "core/simd_target.h"

#if TQLAB_X86_KERNELS
#include <cpuid.h>
#endif

namespace tqlab {
namespace {

// Portable first: supported_kernel_sets() lists the forms in this order.
constexpr auto kKernelSetNames = make_name_table<KernelSet>(
    {{KernelSet::portable, "portable"}, {KernelSet::avx2, "avx2"}, {KernelSet::avx512, "avx512"}});
constexpr auto kKernelSetInstructions = make_name_table<KernelSet>(
    {{KernelSet::portable, "portable"}, {KernelSet::avx2, "avx2+fma+f16c"}, {KernelSet::avx512, "avx512+avx2+fma"}});

// -1 until the first call decides; then the KernelSet as an int. A relaxed
// load suffices: the value is a plain enum and every store of it is complete.
std::atomic<int> active_set{-1};
std::once_flag environment_read;

KernelSet from_environment() {
  const char* value = std::getenv("TQLAB_KERNELS");
  if (value == nullptr || std::string_view(value).empty() || std::string_view(value) == "auto") {
    const std::vector<KernelSet> supported = supported_kernel_sets();
    return supported.back();
  }
  const std::optional<KernelSet> named = parse_kernel_set(value);
  if (!named) fail("TQLAB_KERNELS={}: expected auto, portable, avx2 or avx512", value);
  if (!cpu_supports(*named)) {
    std::vector<std::string_view> supported;
    for (KernelSet set : supported_kernel_sets()) supported.push_back(kernel_set_name(set));
    fail("TQLAB_KERNELS={}: this CPU cannot run the {} kernels ({}); it can run: {}", value, value,
         kernel_set_instructions(*named), fmt::join(supported, ", "));
  }
  return *named;
}

#if TQLAB_X86_KERNELS
// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has no
// "f16c". The AVX2 check beside it already covers the OS saving YMM state.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & bit_F16C) != 0;
}
#endif

}  // namespace

std::string_view kernel_set_name(KernelSet set) { return kKernelSetNames.name(set); }

std::optional<KernelSet> parse_kernel_set(std::string_view name) { return kKernelSetNames.parse(name); }

std::string_view kernel_set_instructions(KernelSet set) { return kKernelSetInstructions.name(set); }

bool cpu_supports(KernelSet set) {
  if (set == KernelSet::portable) return true;
#if TQLAB_X86_KERNELS
  // libgcc's (and compiler-rt's) feature bits already require the operating
  // system to save the YMM / ZMM registers (XGETBV), not just the CPUID bits.
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  if (set == KernelSet::avx2) return avx2;
  if (set == KernelSet::avx512) {
    return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
#endif
  return false;
}

std::vector<KernelSet> supported_kernel_sets() {
  std::vector<KernelSet> supported;
  for (KernelSet set : kKernelSetNames.values()) {
    if (cpu_supports(set)) supported.push_back(set);
  }
  return supported;
}

KernelSet active_kernel_set() {
  const int active = active_set.load(std::memory_order_relaxed);
  if (active >= 0) return static_cast<KernelSet>(active);
  // call_once runs again after a throw, so a bad TQLAB_KERNELS fails every call.
  std::call_once(environment_read, [] {
    const KernelSet chosen = from_environment();
    int unset = -1;
    active_set.compare_exchange_strong(unset, static_cast<int>(chosen));
  });
  return static_cast<KernelSet>(active_set.load(std::memory_order_relaxed));
}

KernelSet use_kernel_set(KernelSet set) {
  if (!cpu_supports(set)) {
    fail("this CPU cannot run the {} kernels ({})", kernel_set_name(set), kernel_set_instructions(set));
  }
  const KernelSet previous = active_kernel_set();
  active_set.store(static_cast<int>(set), std::memory_order_relaxed);
  return previous;
}

}  // namespace tqlab
