#include "sweep_test_util.h"

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "io/tensor_file.h"

namespace tqlab::sweep_test {

void write_dump(const std::string& path, const DumpShape& shape, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<float>> storage;
  std::vector<TensorToWrite> tensors;
  std::vector<std::vector<std::byte>> bytes;
  const auto add = [&](const std::string& name, int heads, int dim, double scale, double offset) {
    std::vector<float> values(static_cast<std::size_t>(shape.seqs) * heads * shape.tokens * dim);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const int channel = static_cast<int>(i % static_cast<std::size_t>(dim));
      values[i] = static_cast<float>(scale * rng.gaussian() + (channel == 1 ? offset : 0.0));
    }
    bytes.push_back(encode_floats(values, DType::f32));
    tensors.push_back({name, DType::f32, {shape.seqs, heads, shape.tokens, dim}, bytes.back()});
  };
  for (int layer = 0; layer < shape.layers; ++layer) {
    const std::string prefix = "layers." + std::to_string(layer);
    // Layer 1's queries are strong: 1-bit keys move their logits by tens of nats.
    add(prefix + ".q", shape.q_heads, shape.key_dim, layer == 1 ? 12.0 : 2.0, 0.0);
    add(prefix + ".k", shape.kv_heads, shape.key_dim, 1.0, 3.0);
    add(prefix + ".v", shape.kv_heads, shape.value_dim, 0.5, 0.0);
  }
  write_tensor_file(path, tensors, {{"layout", "seq head token dim"}});
}

SweepRun run_config(const nlohmann::json& config, const std::string& config_path, int threads) {
  SweepRun run{plan_sweep(parse_sweep_config(config, config_path)), {}};
  SweepOptions options;
  options.threads = threads;
  run.results = run_sweep(run.plan, options);
  return run;
}

std::string results_text(const SweepRun& run) {
  nlohmann::ordered_json document = sweep_results_json(run.plan, run.results, DataIdentity{1, "x"});
  document.erase("timing");
  return document.dump(1);
}

}  // namespace tqlab::sweep_test
