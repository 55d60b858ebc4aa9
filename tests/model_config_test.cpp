// config.json and checkpoint folders: what each family means, the defaults
// transformers' config classes give, and every refusal naming the key (or the
// tensor) with its value and what is supported.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "model/checkpoint.h"
#include "model/model_config.h"
#include "model_test_util.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::CheckpointOptions;
using testing::input_error_message;
using testing::scratch_folder;
using testing::small_config;
using testing::write_checkpoint;

ModelConfig parse(const nlohmann::json& config) { return parse_model_config(config, "m/config.json"); }

std::string refusal(const nlohmann::json& config) {
  return input_error_message([&] { parse(config); });
}

TEST(ModelConfigTest, FamiliesSetBiasesNormsAndHeadDims) {
  const ModelConfig llama = parse(small_config("LlamaForCausalLM"));
  EXPECT_EQ(llama.family, ModelFamily::llama);
  EXPECT_FALSE(llama.qkv_bias || llama.o_bias || llama.mlp_bias || llama.qk_norm || llama.tie_word_embeddings);
  EXPECT_EQ(llama.group(), 2);
  const ModelConfig qwen2 = parse(small_config("Qwen2ForCausalLM"));
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.o_bias);
  EXPECT_TRUE(qwen2.tie_word_embeddings);
  const ModelConfig qwen3 = parse(small_config("Qwen3ForCausalLM"));
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_EQ(qwen3.head_dim, 24);  // explicit, not 64 / 4
  nlohmann::json no_head_dim = small_config("Qwen3ForCausalLM");
  no_head_dim.erase("head_dim");
  EXPECT_EQ(parse(no_head_dim).head_dim, 128);  // Qwen3Config's default
  nlohmann::json llama_default = small_config("LlamaForCausalLM");
  llama_default.erase("head_dim");
  llama_default.erase("num_key_value_heads");
  EXPECT_EQ(parse(llama_default).head_dim, 16);  // hidden / heads
  EXPECT_EQ(parse(llama_default).kv_heads, 4);   // multi-head attention
  nlohmann::json biased = small_config("LlamaForCausalLM");
  biased["attention_bias"] = true;
  EXPECT_TRUE(parse(biased).qkv_bias && parse(biased).o_bias);
  nlohmann::json by_type = small_config("LlamaForCausalLM");
  by_type.erase("architectures");
  by_type["model_type"] = "mistral";
  EXPECT_EQ(parse(by_type).family, ModelFamily::mistral);
}

TEST(ModelConfigTest, RopeScalingAbsentLinearLlama3AndTheNewerRopeParameters) {
  nlohmann::json config = small_config("LlamaForCausalLM");
  config["rope_scaling"] = nullptr;
  EXPECT_EQ(parse(config).rope.scaling, RopeConfig::Scaling::none);
  config["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_EQ(parse(config).rope.scaling, RopeConfig::Scaling::linear);
  EXPECT_EQ(parse(config).rope.factor, 2.0);
  config["rope_theta"] = 500000.0;
  config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  const ModelConfig llama3 = parse(config);
  EXPECT_EQ(llama3.rope.scaling, RopeConfig::Scaling::llama3);
  EXPECT_EQ(llama3.rope.theta, 500000.0);
  EXPECT_EQ(llama3.rope.original_max_position_embeddings, 8192);
  config.erase("rope_scaling");
  config.erase("rope_theta");
  config["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  EXPECT_EQ(parse(config).rope.theta, 1000000.0);
}

TEST(ModelConfigTest, RefusesWhatTheForwardDoesNotImplementNamingKeyValueAndChoices) {
  nlohmann::json config = small_config("LlamaForCausalLM");
  config["architectures"] = {"GPT2LMHeadModel"};
  std::string message = refusal(config);
  EXPECT_NE(message.find("architectures[0]"), std::string::npos) << message;
  EXPECT_NE(message.find("GPT2LMHeadModel"), std::string::npos) << message;
  EXPECT_NE(message.find("Qwen3ForCausalLM"), std::string::npos) << message;

  config = small_config("LlamaForCausalLM");
  config["hidden_act"] = "gelu";
  message = refusal(config);
  EXPECT_NE(message.find("hidden_act: \"gelu\" is not supported (supported: silu)"), std::string::npos) << message;

  config = small_config("LlamaForCausalLM");
  config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  message = refusal(config);
  EXPECT_NE(message.find("rope_scaling.rope_type: \"yarn\" is not supported (supported: default, linear, llama3)"),
            std::string::npos) << message;

  config = small_config("LlamaForCausalLM");
  config["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}};
  message = refusal(config);
  EXPECT_NE(message.find("original_max_position_embeddings"), std::string::npos) << message;

  config = small_config("LlamaForCausalLM");
  config["num_key_value_heads"] = 3;
  message = refusal(config);
  EXPECT_NE(message.find("num_key_value_heads: 3 does not divide num_attention_heads 4"), std::string::npos) << message;

  config = small_config("LlamaForCausalLM");
  config["partial_rotary_factor"] = 0.5;
  EXPECT_NE(refusal(config).find("partial_rotary_factor: 0.5 is not supported"), std::string::npos);

  config = small_config("LlamaForCausalLM");
  config["quantization_config"] = {{"quant_method", "gptq"}};
  EXPECT_NE(refusal(config).find("quantization_config"), std::string::npos);

  config = small_config("LlamaForCausalLM");
  config.erase("hidden_size");
  EXPECT_NE(refusal(config).find("missing key 'hidden_size'"), std::string::npos);

  EXPECT_NE(refusal(nlohmann::json::array()).find("expected a JSON object"), std::string::npos);
}

TEST(ModelConfigTest, SlidingWindowsAreRefusedOnlyWhereTheyWouldAct) {
  nlohmann::json mistral = small_config("MistralForCausalLM");
  mistral["sliding_window"] = 256;
  const ModelConfig config = parse(mistral);
  EXPECT_NO_THROW(check_context(config, 256, "--ctx"));
  const std::string message = input_error_message([&] { check_context(config, 257, "--ctx"); });
  EXPECT_NE(message.find("--ctx 257 exceeds the sliding window of 256 tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("use --ctx 256 or less"), std::string::npos) << message;

  nlohmann::json qwen = small_config("Qwen2ForCausalLM");
  qwen["sliding_window"] = 32;
  qwen["use_sliding_window"] = false;
  EXPECT_NO_THROW(check_context(parse(qwen), 4096, "--ctx"));  // configured but off
  qwen["use_sliding_window"] = true;
  qwen["max_window_layers"] = 1;  // layer 1 of 2 slides
  EXPECT_THROW(check_context(parse(qwen), 33, "--ctx"), InputError);
  qwen["max_window_layers"] = 2;  // none does
  EXPECT_NO_THROW(check_context(parse(qwen), 4096, "--ctx"));
}

TEST(CheckpointTest, OpensSingleFilesAndShardedIndexesAlike) {
  const std::string single = scratch_folder("single"), sharded = scratch_folder("sharded");
  write_checkpoint(single, small_config("LlamaForCausalLM"));
  CheckpointOptions options;
  options.shards = 3;
  write_checkpoint(sharded, small_config("LlamaForCausalLM"), options);
  const auto one = Checkpoint::open(single);
  const auto three = Checkpoint::open(sharded);
  EXPECT_EQ(one->files().size(), 1u);
  ASSERT_EQ(three->files().size(), 3u);
  EXPECT_EQ(three->files()[0].name, "model-00001-of-00003.safetensors");
  const TensorView& a = one->tensor("model.layers.1.mlp.down_proj.weight");
  const TensorView& b = three->tensor("model.layers.1.mlp.down_proj.weight");
  EXPECT_EQ(read_all_bytes(a), read_all_bytes(b));
  EXPECT_EQ(one->weight_dtype(), "f32");
}

std::string open_refusal(const std::string& dir) {
  return input_error_message([&] { Checkpoint::open(dir); });
}

TEST(CheckpointTest, NamesMissingExtraMisshapedAndMistypedTensors) {
  const nlohmann::json config = small_config("LlamaForCausalLM");
  std::string dir = scratch_folder("missing");
  CheckpointOptions options;
  options.drop = {"model.layers.1.self_attn.k_proj.weight"};
  write_checkpoint(dir, config, options);
  std::string message = open_refusal(dir);
  EXPECT_NE(message.find("tensor 'model.layers.1.self_attn.k_proj.weight' is missing (expected shape [32, 64]"),
            std::string::npos) << message;

  dir = scratch_folder("extra");
  options = {};
  options.extra = {"model.layers.0.mlp.extra_proj.weight"};
  write_checkpoint(dir, config, options);
  message = open_refusal(dir);
  EXPECT_NE(message.find("tensor 'model.layers.0.mlp.extra_proj.weight' (shape [4]"), std::string::npos) << message;

  dir = scratch_folder("misshaped");
  options = {};
  options.reshape = "model.layers.0.self_attn.o_proj.weight";
  write_checkpoint(dir, config, options);
  message = open_refusal(dir);
  EXPECT_NE(
      message.find(
          "'model.layers.0.self_attn.o_proj.weight' in 'model.safetensors' has shape [65, 64]; expected [64, 64]"),
      std::string::npos)
      << message;

  dir = scratch_folder("mistyped");
  options = {};
  options.dtype = DType::f64;
  write_checkpoint(dir, config, options);
  message = open_refusal(dir);
  EXPECT_NE(message.find("is F64; weights must be F32, F16 or BF16"), std::string::npos) << message;

  // Old checkpoints' saved RoPE frequencies are ignored, as transformers ignores them.
  dir = scratch_folder("inv_freq");
  options = {};
  options.extra = {"model.layers.0.self_attn.rotary_emb.inv_freq"};
  write_checkpoint(dir, config, options);
  EXPECT_NO_THROW(Checkpoint::open(dir));

  // Tied embeddings: no lm_head needed, and one of the right shape is ignored.
  nlohmann::json tied = config;
  tied["tie_word_embeddings"] = true;
  dir = scratch_folder("tied");
  write_checkpoint(dir, tied);
  EXPECT_NO_THROW(Checkpoint::open(dir));
}

TEST(CheckpointTest, NamesTheFolderWhenThereIsNoCheckpoint) {
  const std::string dir = scratch_folder("empty");
  EXPECT_NE(open_refusal(dir).find("no config.json"), std::string::npos);
  std::ofstream(dir + "/config.json") << small_config("LlamaForCausalLM").dump();
  std::ofstream(dir + "/pytorch_model.bin") << "pickle";
  const std::string message = open_refusal(dir);
  EXPECT_NE(message.find("no model.safetensors or model.safetensors.index.json"), std::string::npos) << message;
  EXPECT_NE(message.find("pytorch_model.bin is a pickle"), std::string::npos) << message;
  EXPECT_NE(open_refusal(dir + "/nothing").find("not a folder"), std::string::npos);
}

TEST(CheckpointTest, IndexMustAgreeWithItsShards) {
  const std::string dir = scratch_folder("index");
  CheckpointOptions options;
  options.shards = 2;
  write_checkpoint(dir, small_config("LlamaForCausalLM"), options);
  nlohmann::json index;
  std::ifstream(dir + "/model.safetensors.index.json") >> index;
  index["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";  // it is in shard 2
  std::ofstream(dir + "/model.safetensors.index.json") << index.dump();
  const std::string message = open_refusal(dir);
  EXPECT_NE(message.find("model.norm.weight"), std::string::npos) << message;
  index["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
  std::ofstream(dir + "/model.safetensors.index.json") << index.dump();
  EXPECT_NE(open_refusal(dir).find("is not a file name in the checkpoint's folder"), std::string::npos);
}

}  // namespace
}  // namespace tqlab
