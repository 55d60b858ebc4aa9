// Rotation throughput, in ns per vector: the FWHT alone (the tq kernel's inner
// step, twice per round trip), the full Hadamard rotation (signs + FWHT), and
// the dense Haar product. Run: ./build/bench/tqlab_bench --benchmark_filter=Rotation
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/rng.h"
#include "quant/rotation.h"

namespace tqlab {
namespace {

constexpr std::int64_t kBatch = 256;  // vectors per iteration, as a quantizer's chunk

std::vector<float> gaussian_batch(int dim) {
  Rng rng(1);
  std::vector<float> values(static_cast<std::size_t>(kBatch * dim));
  for (float& v : values) v = static_cast<float>(rng.gaussian());
  return values;
}

void BM_RotationFwht(benchmark::State& state) {
  const int log_n = static_cast<int>(state.range(0));
  const int dim = 1 << log_n;
  std::vector<float> x = gaussian_batch(dim);
  for (auto _ : state) {
    for (std::int64_t r = 0; r < kBatch; ++r) fwht_normalized(x.data() + r * dim, log_n);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["ns_per_vector"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_RotationFwhtPortable(benchmark::State& state) {
  const int log_n = static_cast<int>(state.range(0));
  const int dim = 1 << log_n;
  std::vector<float> x = gaussian_batch(dim);
  for (auto _ : state) {
    for (std::int64_t r = 0; r < kBatch; ++r) fwht_normalized_portable(x.data() + r * dim, log_n);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["ns_per_vector"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void rotate_round_trip(benchmark::State& state, RotationKind kind) {
  const int dim = static_cast<int>(state.range(0));
  const auto rotation = Rotation::make(kind, dim, 7);
  std::vector<float> x = gaussian_batch(dim);
  for (auto _ : state) {
    rotation->forward(kBatch, x.data(), x.data());
    rotation->inverse(kBatch, x.data(), x.data());
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  // One item = one vector rotated forward and back, as in a quantizer round trip.
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["ns_per_vector"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_RotationHadamardRoundTrip(benchmark::State& state) { rotate_round_trip(state, RotationKind::hadamard); }
void BM_RotationHaarRoundTrip(benchmark::State& state) { rotate_round_trip(state, RotationKind::haar); }

void BM_RotationHaarBuild(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  std::uint64_t seed = 0;
  for (auto _ : state) benchmark::DoNotOptimize(Rotation::make(RotationKind::haar, dim, ++seed));
}

BENCHMARK(BM_RotationFwht)->DenseRange(6, 8);
BENCHMARK(BM_RotationFwhtPortable)->DenseRange(6, 8);
BENCHMARK(BM_RotationHadamardRoundTrip)->Arg(64)->Arg(128)->Arg(256);
BENCHMARK(BM_RotationHaarRoundTrip)->Arg(64)->Arg(128)->Arg(256);
BENCHMARK(BM_RotationHaarBuild)->Arg(128)->Arg(576)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tqlab
