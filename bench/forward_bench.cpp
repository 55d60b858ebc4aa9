// The end-to-end forward (model/transformer.h) against the machine's sgemm
// ceiling, one thread, as tools/bench_e2e.sh runs them:
//   BM_SgemmCeiling/N   cblas_sgemm of N x N x N: what one core's OpenBLAS does at its best
//   BM_Forward/ctx      one chunk of ctx tokens through the checkpoint TQLAB_BENCH_MODEL names
//                       (skipped without it), logits for every position, as a PyTorch forward
//                       returns them; counters tokens/s and the matrix products' flop rate
//                       (forward_matmul_flops: causal attention counted at the keys each query reads)
// Both report `gemm_flops` (flops per second), so BM_Forward / BM_SgemmCeiling is the fraction of
// the ceiling the forward reaches. Run with OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1, as
// tqlab itself runs OpenBLAS (src/cli/blas_kernels.h).
#include <cblas.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/rng.h"
#include "model/checkpoint.h"
#include "model/transformer.h"

namespace tqlab {
namespace {

void BM_SgemmCeiling(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  Rng rng(1);
  std::vector<float> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  for (float& value : a) value = static_cast<float>(rng.gaussian());
  for (float& value : b) value = static_cast<float>(rng.gaussian());
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["gemm_flops"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flops_per_forward"] = 2.0 * n * n * n;
}
BENCHMARK(BM_SgemmCeiling)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);

void BM_Forward(benchmark::State& state) {
  const char* dir = std::getenv("TQLAB_BENCH_MODEL");
  if (dir == nullptr) {
    state.SkipWithError("TQLAB_BENCH_MODEL names no checkpoint folder (tools/bench_e2e.sh makes one)");
    return;
  }
  static std::unique_ptr<Checkpoint> checkpoint;
  static std::unique_ptr<Transformer> model;
  if (!checkpoint) {
    checkpoint = Checkpoint::open(dir);
    model = std::make_unique<Transformer>(*checkpoint);
  }
  const ModelConfig& config = model->config();
  const auto ctx = static_cast<int>(state.range(0));
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(ctx));
  for (int t = 0; t < ctx; ++t) tokens[static_cast<std::size_t>(t)] = (t * 7919 + 13) % config.vocab_size;
  ForwardWorkspace workspace;
  Workers workers(static_cast<int>(state.range(1)));
  std::vector<float> hidden(static_cast<std::size_t>(ctx) * config.hidden_size);
  std::vector<float> logits(static_cast<std::size_t>(ctx) * config.vocab_size);
  for (auto _ : state) {
    forward(*model, tokens, {}, workspace, workers, hidden.data());
    output_logits(*model, ctx, hidden.data(), logits.data(), workers);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["tokens"] = benchmark::Counter(ctx, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["gemm_flops"] =
      benchmark::Counter(forward_matmul_flops(config, ctx, ctx), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flops_per_forward"] = forward_matmul_flops(config, ctx, ctx);
}
BENCHMARK(BM_Forward)->Args({512, 1})->Args({2048, 1})->Args({512, 2})->Args({2048, 2})
    ->Unit(benchmark::kSecond)->UseRealTime()->Iterations(2);

}  // namespace
}  // namespace tqlab

