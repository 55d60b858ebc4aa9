// The QJL kernels alone (quant/qjl.h), per vector, on one 256-token chunk at
// D = m = 128, as tq:b=3,qjl=prod hands them a chunk: sketch (float
// projections, certification, signs) and add_estimate (S^T(+-scale) added to
// the rows). Arg: the kernel form (0 portable, 1 avx2, 2 avx512; skipped when
// the CPU lacks it). The whole quantizer: tq_bench.cpp. Results: docs/PERFORMANCE.md.
// Run: ./build/bench/tqlab_bench --benchmark_filter='Qjl'
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/kernel_set.h"
#include "core/rng.h"
#include "quant/qjl.h"
#include "quant/tq_kernels.h"

namespace tqlab {
namespace {

constexpr std::int64_t kVectors = 256;
constexpr int kDim = 128;

// Residuals of the size tq:b=3 leaves (rotated unit vectors minus their 2-bit centroids).
std::vector<float> residuals() {
  Rng rng(5);
  std::vector<float> r(static_cast<std::size_t>(kVectors * kDim));
  for (float& value : r) value = static_cast<float>(rng.gaussian() * 0.03);
  return r;
}

// The form the benchmark's argument names, or nullopt (and the benchmark skipped) when the CPU lacks it.
std::optional<KernelSet> form(benchmark::State& state) {
  const auto set = static_cast<KernelSet>(state.range(0));
  if (!cpu_supports(set)) {
    state.SkipWithError("this CPU lacks the kernel form");
    return std::nullopt;
  }
  state.SetLabel(std::string(kernel_set_name(set)));
  return set;
}

void report(benchmark::State& state) {
  state.SetItemsProcessed(state.iterations() * kVectors);
  state.counters["ns_per_vector"] = benchmark::Counter(static_cast<double>(state.iterations() * kVectors),
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_QjlSketch(benchmark::State& state) {
  const std::optional<KernelSet> set = form(state);
  if (!set) return;
  const ScopedKernelSet use(*set);
  const QjlSketch sketch(kDim, kDim, 3);
  const std::vector<float> r = residuals();
  std::vector<float> norms(kVectors);
  row_norms(kVectors, kDim, kDim, r.data(), norms.data());
  std::vector<std::uint8_t> signs(static_cast<std::size_t>(kVectors * kDim));
  for (auto _ : state) {
    sketch.sketch(kVectors, r.data(), norms.data(), signs.data());
    benchmark::DoNotOptimize(signs.data());
    benchmark::ClobberMemory();
  }
  report(state);
}
BENCHMARK(BM_QjlSketch)->ArgName("form")->Arg(0)->Arg(1)->Arg(2);

void BM_QjlAddEstimate(benchmark::State& state) {
  const std::optional<KernelSet> set = form(state);
  if (!set) return;
  const ScopedKernelSet use(*set);
  const QjlSketch sketch(kDim, kDim, 3);
  Rng rng(6);
  std::vector<std::uint8_t> signs(static_cast<std::size_t>(kVectors * kDim));
  for (std::uint8_t& sign : signs) sign = static_cast<std::uint8_t>(rng.next_u64() & 1);
  std::vector<float> norms(kVectors, 0.2f);
  std::vector<float> out(static_cast<std::size_t>(kVectors * kDim), 0.0f);
  for (auto _ : state) {
    sketch.add_estimate(kVectors, signs.data(), norms.data(), out.data(), kDim);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}
BENCHMARK(BM_QjlAddEstimate)->ArgName("form")->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace tqlab
