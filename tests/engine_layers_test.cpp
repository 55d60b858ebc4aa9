// A run under the llama.cpp engine with K and V given per layer (model/kv_cache_plan.h: one engine
// cache per distinct (K, V) pair of the layers) and a model profile's unit under the engine
// (model/kv_hook.h, KvCacheQuantization::engine_heads: some kv heads the engine's, the others
// exact), held to runs that are already trusted: the uniform engine run, a forward started at a
// layer, tqlab's exact forward.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/engine.h"
#include "model/checkpoint.h"
#include "model/kv_cache_plan.h"
#include "model/transformer.h"
#include "model_test_util.h"
#include "quant/registry.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::scratch_folder;
using testing::small_config;
using testing::write_checkpoint;

constexpr int kLayers = 3;
constexpr int kTokens = 40;

// A LlamaForCausalLM of 3 layers with head_dim 64 (4 query heads, 2 kv heads): llama.cpp's blocks of
// 32 fit, and its rotation of a quantized cache (head_dim % 64 == 0) is on.
class EngineLayersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nlohmann::json config = small_config("LlamaForCausalLM");
    config["num_hidden_layers"] = kLayers;
    config["hidden_size"] = 256;
    config["head_dim"] = 64;
    dir_ = scratch_folder("engine_layers");
    write_checkpoint(dir_, config);
    checkpoint_ = Checkpoint::open(dir_);
    model_ = std::make_unique<Transformer>(*checkpoint_);
    for (int t = 0; t < kTokens; ++t) tokens_.push_back((t * 53 + 7) % model_->config().vocab_size);
  }

  // The final hidden states of the tokens under `cache` (null: exact), and each layer's input.
  std::vector<float> run(const KvCacheQuantization* cache, std::vector<std::vector<float>>* inputs = nullptr,
                         int first_layer = 0, const float* first_input = nullptr) {
    const auto hidden = static_cast<std::size_t>(model_->config().hidden_size);
    ForwardOptions options;
    KvCacheBytes bytes;
    bytes.key.assign(kLayers, 0);
    bytes.value = bytes.key_values = bytes.value_values = bytes.key;
    options.cache = cache;
    options.bytes = &bytes;
    options.first_layer = first_layer;
    options.first_input = first_input;
    if (inputs != nullptr) {
      inputs->assign(kLayers, {});
      options.on_layer_input = [&](int layer, const float* x) {
        (*inputs)[static_cast<std::size_t>(layer)].assign(x, x + kTokens * hidden);
      };
    }
    std::vector<float> out(kTokens * hidden);
    Workers workers(2);
    ForwardWorkspace workspace;
    forward(*model_, tokens_, options, workspace, workers, out.data());
    return out;
  }

  KvCachePlan plan(const LayeredSpec& k, const LayeredSpec& v) const {
    return plan_kv_cache(model_->config(), k, v, {}, "llama.cpp", {}, "runs[0]");
  }

  std::string dir_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<Transformer> model_;
  std::vector<std::int32_t> tokens_;
};

LayeredSpec uniform(const std::string& spec, const char* key_path) { return {spec, {}, {}, key_path}; }

TEST_F(EngineLayersTest, EveryLayerGivenTheSameTypesIsTheUniformRun) {
  LayeredSpec k = uniform("q4_0", "k"), v = uniform("q8_0", "v");
  for (int layer = 0; layer < kLayers; ++layer) {
    k.layer_specs[layer] = "q4_0";
    v.layer_specs[layer] = "q8_0";
  }
  const KvCachePlan layered = plan(k, v);
  const KvCachePlan one = plan(uniform("q4_0", "k"), uniform("q8_0", "v"));
  EXPECT_EQ(layered.engines.size(), 1u);  // one (K, V) pair: one engine cache, shared by every layer
  ASSERT_EQ(layered.cache.engine.size(), static_cast<std::size_t>(kLayers));
  const std::vector<float> expected = run(&one.cache);
  EXPECT_EQ(run(&layered.cache), expected);
  EXPECT_NE(run(nullptr), expected);  // the engine's cache is not the exact one
}

// Layers 0-1 at q4_0 and layer 2 at q8_0: the first two compute what the uniform q4_0 run does, and
// layer 2 what the uniform q8_0 run computes started at layer 2 from that input.
TEST_F(EngineLayersTest, EachLayerRunsItsOwnTypes) {
  LayeredSpec k = uniform("q8_0", "k"), v = uniform("q8_0", "v");
  k.layer_specs = {{0, "q4_0"}, {1, "q4_0"}};
  v.layer_specs = k.layer_specs;
  const KvCachePlan layered = plan(k, v);
  EXPECT_EQ(layered.engines.size(), 2u);
  const KvCachePlan low = plan(uniform("q4_0", "k"), uniform("q4_0", "v"));
  const KvCachePlan high = plan(uniform("q8_0", "k"), uniform("q8_0", "v"));
  std::vector<std::vector<float>> layered_inputs, low_inputs;
  const std::vector<float> out = run(&layered.cache, &layered_inputs);
  const std::vector<float> low_out = run(&low.cache, &low_inputs);
  for (int layer = 0; layer < kLayers; ++layer) EXPECT_EQ(layered_inputs[layer], low_inputs[layer]) << layer;
  EXPECT_NE(out, low_out);
  EXPECT_EQ(run(&high.cache, nullptr, 2, layered_inputs[2].data()), out);
}

// The model profile's per-head unit: the heads engine_heads names read the engine's attention,
// the others the exact one; every head named is the engine's layer, none the exact forward.
TEST_F(EngineLayersTest, EngineHeadsAreTheEnginesTheOthersExact) {
  const std::unique_ptr<EngineCache> engine = parse_engine("llama.cpp", "")->bind("q4_0", "f32", 64);
  const std::unique_ptr<Quantizer> fp32 = make_quantizer("fp32");
  KvCacheQuantization whole;  // the other layers in tqlab's path, exact
  whole.key.assign(kLayers, std::vector<const Quantizer*>(2, fp32.get()));
  whole.value = whole.key;
  whole.engine.assign(kLayers, nullptr);
  whole.engine[1] = engine.get();
  const std::vector<float> exact = run(nullptr);
  const std::vector<float> under_engine = run(&whole);
  EXPECT_NE(under_engine, exact);
  KvCacheQuantization some = whole;
  some.engine_heads.assign(kLayers, {});
  some.engine_heads[1] = {true, true};
  EXPECT_EQ(run(&some), under_engine);
  some.engine_heads[1] = {false, false};
  EXPECT_EQ(run(&some), exact);
  some.engine_heads[1] = {true, false};
  const std::vector<float> one_head = run(&some);
  EXPECT_NE(one_head, exact);
  EXPECT_NE(one_head, under_engine);
}

TEST_F(EngineLayersTest, SpecsPerHeadOrNotTheEnginesAreRefused) {
  LayeredSpec k = uniform("q8_0", "k");
  k.head_specs[{1, 0}] = "q4_0";
  const std::string message = testing::input_error_message([&] { plan(k, uniform("q8_0", "v")); });
  EXPECT_NE(message.find("runs[0]: K or V given per head with engine llama.cpp"), std::string::npos) << message;
  LayeredSpec v = uniform("q8_0", "v");
  v.layer_specs[2] = "tq:b=4";
  EXPECT_THROW(plan(uniform("q8_0", "k"), v), InputError);
}

}  // namespace
}  // namespace tqlab
