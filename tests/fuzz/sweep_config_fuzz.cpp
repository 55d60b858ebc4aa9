// libFuzzer target. A sweep config (sweep/sweep_config.h) as `tqlab sweep --config`
// reads it: JSON text, every key validated, then planned (sweep/sweep_plan.h: the
// dump opened and checked against data.keys/values/queries/layout/layers, every
// spec built and checked against the head dims, run identities compared, needle
// trials placed) against a small dump written once at start-up, whatever path
// the config names. Nothing is computed: planning reads no tensor data.
// Input: the config file's text.
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "io/json_reader.h"
#include "io/tensor_file.h"
#include "sweep/sweep_config.h"
#include "sweep/sweep_plan.h"

namespace {

std::string dump_path;

// Two layers of "head token dim" tensors: K and V [2 heads, 6 tokens, 8 dims], Q 4 heads.
void write_dump() {
  char folder[] = "/tmp/tqlab-fuzz-XXXXXX";
  if (::mkdtemp(folder) == nullptr) std::abort();
  dump_path = std::string(folder) + "/kv.safetensors";
  std::vector<float> values(4 * 6 * 8);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 37) % 17) - 8.0f;
  const std::vector<std::byte> kv = tqlab::encode_floats({values.data(), 2 * 6 * 8}, tqlab::DType::f32);
  const std::vector<std::byte> q = tqlab::encode_floats(values, tqlab::DType::f32);
  std::vector<tqlab::TensorToWrite> tensors;
  for (const char* layer : {"0", "1"}) {
    for (const char* role : {"k", "v"}) {
      tensors.push_back({std::string("layers.") + layer + "." + role, tqlab::DType::f32, {2, 6, 8}, kv});
    }
    tensors.push_back({std::string("layers.") + layer + ".q", tqlab::DType::f32, {4, 6, 8}, q});
  }
  tqlab::write_tensor_file(dump_path, tensors, {{"layout", "head token dim"}});
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  write_dump();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_success_or_input_error([&] {
    const nlohmann::json document = parse_json_text(text, "/fuzz/config.json");
    SweepConfig config = parse_sweep_config(document, "/fuzz/config.json");
    (void)describe_layers(config.data.kv.layers);
    config.data.resolved_path = dump_path;
    const SweepPlan plan = plan_sweep(std::move(config));
    for (const PlannedRun& run : plan.runs) (void)run.identity();
  });
  return 0;
}
