#include "model_test_util.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/rng.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"

namespace tqlab::testing {

nlohmann::json small_config(const std::string& architecture) {
  nlohmann::json config = {{"architectures", {architecture}},
                           {"vocab_size", 96},
                           {"hidden_size", 64},
                           {"intermediate_size", 96},
                           {"num_hidden_layers", 2},
                           {"num_attention_heads", 4},
                           {"num_key_value_heads", 2},
                           {"hidden_act", "silu"},
                           {"rms_norm_eps", 1e-5},
                           {"rope_theta", 10000.0},
                           {"max_position_embeddings", 512},
                           {"bos_token_id", 1},
                           {"tie_word_embeddings", false}};
  if (architecture == "Qwen2ForCausalLM") config["tie_word_embeddings"] = true;
  if (architecture == "Qwen3ForCausalLM") config["head_dim"] = 24;
  else config["head_dim"] = 16;
  if (architecture == "MistralForCausalLM") config["sliding_window"] = nullptr;
  return config;
}

std::string scratch_folder(const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "tqlab_model_tests" /
                                    fmt::format("{}.{}.{}", test->test_suite_name(), test->name(), name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void write_checkpoint(const std::string& dir, const nlohmann::json& config, const CheckpointOptions& options) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << config.dump(2);
  const ModelConfig parsed = parse_model_config(config, dir + "/config.json");

  Rng rng(options.seed);
  std::vector<std::string> names;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::vector<std::byte>> bytes;
  const auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    if (std::find(options.drop.begin(), options.drop.end(), name) != options.drop.end()) return;
    if (name == options.reshape) shape[0] += 1;
    std::int64_t count = 1;
    for (std::int64_t axis : shape) count *= axis;
    std::vector<float> values(static_cast<std::size_t>(count));
    const bool norm = name.find("norm") != std::string::npos;
    const bool bias = name.ends_with(".bias");
    // Matrices scaled by 1/sqrt(fan-in) so activations stay of order one; norms near 1.
    const double scale = shape.size() == 2 ? 1.0 / std::sqrt(static_cast<double>(shape[1])) : 0.1;
    for (float& value : values)
      value = static_cast<float>((norm ? 1.0 : 0.0) + (bias || norm ? 0.2 : scale) * rng.gaussian());
    if (name == "model.embed_tokens.weight") {
      for (float& value : values) value *= 8.0f;  // embeddings of order one
    }
    names.push_back(name);
    shapes.push_back(shape);
    bytes.push_back(encode_floats(values, options.dtype));
  };
  for (const ExpectedWeight& weight : expected_weights(parsed, NamingConvention::hugging_face))
    add(weight.name, weight.shape);
  for (const std::string& name : options.extra) add(name, {4});

  const int shards = std::max(1, options.shards);
  nlohmann::json weight_map = nlohmann::json::object();
  for (int shard = 0; shard < shards; ++shard) {
    std::vector<TensorToWrite> tensors;
    const std::string file = shards == 1 ? "model.safetensors"
                                         : fmt::format("model-{:05d}-of-{:05d}.safetensors", shard + 1, shards);
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (static_cast<int>(i * shards / names.size()) != shard) continue;
      tensors.push_back({names[i], options.dtype, shapes[i], bytes[i]});
      weight_map[names[i]] = file;
    }
    write_safetensors(dir + "/" + file, tensors, {{"format", "pt"}});
  }
  if (shards > 1) {
    std::ofstream(dir + "/model.safetensors.index.json")
        << nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", weight_map}}.dump(2);
  }
}

double relative_max_error(const std::vector<float>& a, const std::vector<float>& b) {
  double error = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    error = std::max(error, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return error / scale;
}

}  // namespace tqlab::testing
