// Quantizer throughput on one thread, in vectors per second (items_per_second)
// and ns per vector: encode (quantize + pack), decode (unpack + dequantize)
// and the round trip of both, for one (layer, head) tensor of 4096 tokens at
// head dim 128, as a sweep hands them to a quantizer. The target (docs/PERFORMANCE.md):
// tq:b=4 round trip >= 3 M vectors/s. The ceiling is a copy of the same
// tensor (BM_CopyCeiling). Results: docs/PERFORMANCE.md.
// Run: ./build/bench/tqlab_bench --benchmark_filter='Quant|Copy|TqKernel'
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/bit_pack.h"
#include "kv/synthetic_kv.h"
#include "quant/codebook.h"
#include "quant/registry.h"
#include "quant/tq_kernels.h"

namespace tqlab {
namespace {

constexpr std::int64_t kTokens = 4096;
constexpr int kDim = 128;

// Keys of one synthetic head (outlier channels, RoPE): KV-like data, deterministic.
const std::vector<float>& head_keys() {
  static const std::vector<float> keys = [] {
    SyntheticKvOptions options;
    options.layers = 1;
    options.kv_heads = 1;
    options.q_heads = 1;
    options.tokens = static_cast<int>(kTokens);
    options.dim = kDim;
    const SyntheticKv kv = generate_synthetic_kv(options);
    for (const SyntheticTensor& tensor : kv.tensors) {
      if (tensor.name == "layers.0.k") return tensor.values;
    }
    return std::vector<float>{};
  }();
  return keys;
}

void report_vectors(benchmark::State& state, const std::string& spec, std::int64_t vectors = kTokens) {
  state.SetItemsProcessed(state.iterations() * vectors);
  state.counters["ns_per_vector"] = benchmark::Counter(static_cast<double>(state.iterations() * vectors),
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(spec);
}

const QuantContext kContext{1, Role::key, 0, 0};

void BM_QuantRoundTrip(benchmark::State& state, const std::string& spec) {
  const auto quantizer = make_quantizer(spec);
  const std::vector<float>& x = head_keys();
  std::vector<float> out(x.size());
  for (auto _ : state) {
    const EncodedTensor encoded = quantizer->encode(kTokens, kDim, x.data(), kContext);
    quantizer->decode(encoded, kContext, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report_vectors(state, spec);
}

void BM_QuantEncode(benchmark::State& state, const std::string& spec) {
  const auto quantizer = make_quantizer(spec);
  const std::vector<float>& x = head_keys();
  for (auto _ : state) {
    EncodedTensor encoded = quantizer->encode(kTokens, kDim, x.data(), kContext);
    benchmark::DoNotOptimize(encoded.bytes.data());
    benchmark::ClobberMemory();
  }
  report_vectors(state, spec);
}

void BM_QuantDecode(benchmark::State& state, const std::string& spec) {
  const auto quantizer = make_quantizer(spec);
  const std::vector<float>& x = head_keys();
  const EncodedTensor encoded = quantizer->encode(kTokens, kDim, x.data(), kContext);
  std::vector<float> out(x.size());
  for (auto _ : state) {
    quantizer->decode(encoded, kContext, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report_vectors(state, spec);
}

// The ceiling: the tensor copied to the output buffer, as a lossless round trip would.
void BM_CopyCeiling(benchmark::State& state) {
  const std::vector<float>& x = head_keys();
  std::vector<float> out(x.size());
  for (auto _ : state) {
    std::memcpy(out.data(), x.data(), sizeof(float) * x.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report_vectors(state, "memcpy");
}
BENCHMARK(BM_CopyCeiling);

// The kernels of tq:b=4 alone, per vector of 128 values, on one 256-token chunk (L1/L2-resident):
// norms, bucketize + pack, unpack + centroid lookup (the rotation: rotation_bench.cpp).
constexpr std::int64_t kChunk = 256;

void BM_TqKernelRowNorms(benchmark::State& state) {
  const std::vector<float>& x = head_keys();
  std::vector<float> norms(kChunk);
  for (auto _ : state) {
    row_norms(kChunk, kDim, kDim, x.data(), norms.data());
    benchmark::DoNotOptimize(norms.data());
    benchmark::ClobberMemory();
  }
  report_vectors(state, "row_norms", kChunk);
}
BENCHMARK(BM_TqKernelRowNorms);

void BM_TqKernelQuantizeAndPack(benchmark::State& state) {
  const Codebook& codebook = lloyd_max_codebook(kDim, static_cast<int>(state.range(0)), CodebookDistribution::beta);
  std::vector<float> y(head_keys().begin(), head_keys().begin() + kChunk * kDim);
  for (float& v : y) v *= 0.01f;  // roughly the scale of a rotated unit vector's coordinates
  std::vector<std::uint8_t> packed(packed_bytes(kChunk * kDim, codebook.bits));
  for (auto _ : state) {
    quantize_and_pack(y.size(), y.data(), codebook, packed.data(), 0);
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  report_vectors(state, "quantize_and_pack", kChunk);
}
BENCHMARK(BM_TqKernelQuantizeAndPack)->ArgName("b")->Arg(2)->Arg(3)->Arg(4)->Arg(5)->Arg(6)->Arg(8);

void BM_TqKernelUnpackAndDequantize(benchmark::State& state) {
  const Codebook& codebook = lloyd_max_codebook(kDim, static_cast<int>(state.range(0)), CodebookDistribution::beta);
  std::vector<std::uint8_t> packed(packed_bytes(kChunk * kDim, codebook.bits), 0x5A);
  std::vector<float> y(static_cast<std::size_t>(kChunk * kDim));
  for (auto _ : state) {
    unpack_and_dequantize(y.size(), packed.data(), 0, codebook, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  report_vectors(state, "unpack_and_dequantize", kChunk);
}
BENCHMARK(BM_TqKernelUnpackAndDequantize)->ArgName("b")->Arg(2)->Arg(4)->Arg(6)->Arg(7)->Arg(8);

BENCHMARK_CAPTURE(BM_QuantRoundTrip, tq_b4, std::string("tq:b=4"));
BENCHMARK_CAPTURE(BM_QuantEncode, tq_b4, std::string("tq:b=4"));
BENCHMARK_CAPTURE(BM_QuantDecode, tq_b4, std::string("tq:b=4"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, tq_b2, std::string("tq:b=2"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, tq_b3, std::string("tq:b=3"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, tq_b8, std::string("tq:b=8"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, tq_b4_block32, std::string("tq:b=4,block=32"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, tq_b4_haar, std::string("tq:b=4,rot=haar"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, tq_b4_qjl_prod, std::string("tq:b=4,qjl=prod"));
// The QJL target (docs/PERFORMANCE.md): >= 1 M vectors/s round trip on one thread.
BENCHMARK_CAPTURE(BM_QuantRoundTrip, tq_b3_qjl_prod, std::string("tq:b=3,qjl=prod"));
BENCHMARK_CAPTURE(BM_QuantEncode, tq_b3_qjl_prod, std::string("tq:b=3,qjl=prod"));
BENCHMARK_CAPTURE(BM_QuantDecode, tq_b3_qjl_prod, std::string("tq:b=3,qjl=prod"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, baseline_q4_0, std::string("q4_0"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, baseline_kivi_b4, std::string("kivi:b=4"));
BENCHMARK_CAPTURE(BM_QuantRoundTrip, baseline_fp8_e4m3, std::string("fp8_e4m3"));

}  // namespace
}  // namespace tqlab
