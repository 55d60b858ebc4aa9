// Throughput of opening tensor files and converting their data: .npy (mapped), .npz
// stored (mapped) and deflated (inflated at open, CRC-checked), and the .npz writer.
// Data: KV-like fp16 values (Gaussian, so deflate gains little, as on real dumps).
#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/tensor_file.h"

namespace tqlab {
namespace {

constexpr std::int64_t kTokens = 32768, kDim = 128;  // 4 Mi fp16 values = 8 MiB

const std::vector<std::byte>& kv_like_f16() {
  static const std::vector<std::byte> bytes = [] {
    std::mt19937_64 random(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);  // benchmark data only: portability irrelevant
    std::vector<float> values(static_cast<std::size_t>(kTokens * kDim));
    for (float& v : values) v = normal(random);
    return encode_floats(values, DType::f16);
  }();
  return bytes;
}

std::string scratch(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tqlab_io_bench_" + name)).string();
}

TensorToWrite kv_tensor() { return {"keys", DType::f16, {kTokens, kDim}, kv_like_f16()}; }

void open_and_convert(benchmark::State& state, const std::string& path) {
  std::vector<float> out(static_cast<std::size_t>(kTokens * kDim));
  for (auto _ : state) {
    const auto file = TensorFile::open(path);
    read_all_floats(file->tensors()[0], out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kv_like_f16().size()));
}

void BM_OpenNpyF16ToFloat(benchmark::State& state) {
  const std::string path = scratch("keys.npy");
  write_npy(path, kv_tensor());
  open_and_convert(state, path);
  std::filesystem::remove(path);
}
BENCHMARK(BM_OpenNpyF16ToFloat)->Unit(benchmark::kMillisecond);

void BM_OpenNpz(benchmark::State& state) {
  const bool compressed = state.range(0) != 0;
  const std::string path = scratch(compressed ? "deflated.npz" : "stored.npz");
  const TensorToWrite tensors[] = {kv_tensor()};
  write_npz(path, tensors, compressed);
  state.SetLabel(compressed ? "deflated" : "stored");
  open_and_convert(state, path);
  std::filesystem::remove(path);
}
BENCHMARK(BM_OpenNpz)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_WriteNpz(benchmark::State& state) {
  const bool compressed = state.range(0) != 0;
  const std::string path = scratch("written.npz");
  const TensorToWrite tensors[] = {kv_tensor()};
  for (auto _ : state) write_npz(path, tensors, compressed);
  state.SetLabel(compressed ? "deflated" : "stored");
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kv_like_f16().size()));
  std::filesystem::remove(path);
}
BENCHMARK(BM_WriteNpz)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tqlab
