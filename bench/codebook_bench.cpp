// Time to compute Lloyd–Max codebooks from scratch (bypassing the cache):
// single (d, b, distribution) cases, and every codebook with d <= 1024, b <= 8
// for one distribution (1023 × 8 codebooks).
#include <string>

#include <benchmark/benchmark.h>

#include "quant/codebook.h"

namespace {

using tqlab::CodebookDistribution;

void BM_ComputeCodebook(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const int bits = static_cast<int>(state.range(1));
  const auto distribution = static_cast<CodebookDistribution>(state.range(2));
  for (auto _ : state) benchmark::DoNotOptimize(tqlab::compute_codebook(dim, bits, distribution));
  state.SetLabel(std::string(tqlab::codebook_distribution_name(distribution)));
}
BENCHMARK(BM_ComputeCodebook)
    ->ArgNames({"d", "b", "dist"})
    ->ArgsProduct({{2, 128, 4096}, {4, 8}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond);

void BM_AllCodebooksUpTo1024(benchmark::State& state) {
  const auto distribution = static_cast<CodebookDistribution>(state.range(0));
  for (auto _ : state) {
    for (int dim = 2; dim <= 1024; ++dim)
      for (int bits = 1; bits <= 8; ++bits) benchmark::DoNotOptimize(tqlab::compute_codebook(dim, bits, distribution));
  }
  state.SetLabel(std::string(tqlab::codebook_distribution_name(distribution)));
}
BENCHMARK(BM_AllCodebooksUpTo1024)->ArgName("dist")->DenseRange(0, 2)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
