// The sweep's attention block (metrics/attention_block.h) beside a plain
// cblas_sgemm of the same shapes, in the same process, one thread: the last
// 128 causal queries of a 2048-token chunk at head dim 128 (the sweep's query
// block, kQueryBlockRows in sweep/sweep.cpp, attending all 2048 keys at the end
// of the chunk), with the error of a 4-bit-like quantization.
//   BM_AttentionCompare   one run's measurement: set_key_error + compare
//                         (3 sgemms of rows x keys x D, softmax, KL, top-k, cosine)
//   BM_AttentionSgemms    the same 3 sgemms alone: the BLAS ceiling of the above
//   BM_AttentionPerQuery  compare_query_attention alone for the block's rows
//                         (exp, softmax, KL, top-k in double): the non-BLAS part
//   BM_AttentionSetExact  once per (q head, block), shared by every run: dgemm + softmax
// Each reports GFLOP/s of its sgemm work (2 rows keys D per product) as
// `gemm_flops`, so that BM_AttentionCompare / BM_AttentionSgemms is the
// fraction of the BLAS rate the block reaches (tools/bench.sh prints it).
// OpenBLAS: run with OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1, as
// tqlab itself runs (src/cli/blas_kernels.h).
#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/rng.h"
#include "metrics/attention_block.h"
#include "metrics/attention_compare.h"
#include "metrics/attention_geometry.h"

namespace tqlab {
namespace {

constexpr int kChunk = 2048;
constexpr int kRows = 128;
constexpr int kDim = 128;
constexpr int kFirst = kChunk - kRows;  // the block that attends every key
constexpr int kKeys = kChunk;

struct Inputs {
  std::vector<float> q, k, v, dk, dv;
};

const Inputs& inputs() {
  static const Inputs data = [] {
    Inputs in;
    Rng rng(2026);
    auto fill = [&](std::vector<float>& x, std::size_t n, double scale) {
      x.resize(n);
      for (float& value : x) value = static_cast<float>(rng.gaussian() * scale);
    };
    fill(in.q, static_cast<std::size_t>(kRows) * kDim, 1.0);
    fill(in.k, static_cast<std::size_t>(kKeys) * kDim, 1.0);
    fill(in.v, static_cast<std::size_t>(kKeys) * kDim, 1.0);
    fill(in.dk, static_cast<std::size_t>(kKeys) * kDim, 0.1);  // ~ tq:b=4's relative error
    fill(in.dv, static_cast<std::size_t>(kKeys) * kDim, 0.1);
    return in;
  }();
  return data;
}

const double kScale = 1.0 / std::sqrt(static_cast<double>(kDim));
const ChunkGeometry kGeometry{0, kChunk};

// Three products of kRows x kKeys x kDim per comparison.
void report_gemm_flops(benchmark::State& state) {
  const double flops = 3.0 * 2.0 * kRows * static_cast<double>(kKeys) * kDim;
  state.counters["gemm_flops"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["queries"] = benchmark::Counter(static_cast<double>(kRows) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}

void BM_AttentionCompare(benchmark::State& state) {
  const Inputs& in = inputs();
  AttentionBlock block;
  block.set_exact(kGeometry, kFirst, kRows, true, kScale, kDim, kDim, in.q.data(), in.k.data(), in.v.data());
  const ExactTokens exact;
  double sink = 0;
  for (auto _ : state) {
    block.set_key_error(in.dk.data());
    block.compare(exact, in.dv.data(), [&](int, const QueryAttentionError& error, std::optional<double> output) {
      sink += error.kl + output.value_or(0);
    });
  }
  benchmark::DoNotOptimize(sink);
  report_gemm_flops(state);
}
BENCHMARK(BM_AttentionCompare)->Unit(benchmark::kMillisecond);

void BM_AttentionSgemms(benchmark::State& state) {
  const Inputs& in = inputs();
  std::vector<float> logits(static_cast<std::size_t>(kRows) * kKeys), p(logits.size(), 1.0f / kKeys);
  std::vector<float> out(static_cast<std::size_t>(kRows) * kDim);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kRows, kKeys, kDim, 1.0f, in.q.data(), kDim, in.dk.data(),
                kDim, 0.0f, logits.data(), kKeys);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kRows, kDim, kKeys, 1.0f, p.data(), kKeys, in.v.data(), kDim,
                0.0f, out.data(), kDim);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kRows, kDim, kKeys, 1.0f, p.data(), kKeys, in.dv.data(),
                kDim, 1.0f, out.data(), kDim);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report_gemm_flops(state);
}
BENCHMARK(BM_AttentionSgemms)->Unit(benchmark::kMillisecond);

void BM_AttentionPerQuery(benchmark::State& state) {
  const Inputs& in = inputs();
  // Exact logits and P of the block's rows, and delta = scale * q . dk.
  std::vector<double> logits(static_cast<std::size_t>(kRows) * kKeys), p(logits.size()), delta(logits.size());
  std::vector<int> argmax(kRows);
  for (int row = 0; row < kRows; ++row) {
    for (int j = 0; j < kKeys; ++j) {
      double dot = 0, error = 0;
      for (int d = 0; d < kDim; ++d) {
        dot += static_cast<double>(in.q[row * kDim + d]) * in.k[static_cast<std::size_t>(j) * kDim + d];
        error += static_cast<double>(in.q[row * kDim + d]) * in.dk[static_cast<std::size_t>(j) * kDim + d];
      }
      logits[static_cast<std::size_t>(row) * kKeys + j] = kScale * dot;
      delta[static_cast<std::size_t>(row) * kKeys + j] = kScale * error;
    }
  }
  for (int row = 0; row < kRows; ++row) {
    const int attended = attended_keys(kGeometry, true, kFirst + row);
    argmax[row] = exact_softmax(attended, logits.data() + static_cast<std::size_t>(row) * kKeys,
                                p.data() + static_cast<std::size_t>(row) * kKeys);
  }
  std::vector<double> p_tilde(kKeys), scratch(kKeys);
  double sink = 0;
  for (auto _ : state) {
    for (int row = 0; row < kRows; ++row) {
      const std::size_t at = static_cast<std::size_t>(row) * kKeys;
      const int attended = attended_keys(kGeometry, true, kFirst + row);
      sink += compare_query_attention(attended, logits.data() + at, p.data() + at, argmax[row], delta.data() + at,
                                      p_tilde.data(), scratch.data())
                  .kl;
    }
  }
  benchmark::DoNotOptimize(sink);
  report_gemm_flops(state);
}
BENCHMARK(BM_AttentionPerQuery)->Unit(benchmark::kMillisecond);

void BM_AttentionSetExact(benchmark::State& state) {
  const Inputs& in = inputs();
  AttentionBlock block;
  for (auto _ : state) {
    block.set_exact(kGeometry, kFirst, kRows, true, kScale, kDim, kDim, in.q.data(), in.k.data(), in.v.data());
    benchmark::ClobberMemory();
  }
  report_gemm_flops(state);
}
BENCHMARK(BM_AttentionSetExact)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tqlab
