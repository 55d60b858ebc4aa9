// A run's K/V specs resolved for a model (model/kv_cache_plan.h): one quantizer
// per distinct spec, per-layer and per-head specs as a sweep config writes them,
// canonical names, and refusals naming the key.
#include <gtest/gtest.h>

#include "model/kv_cache_plan.h"
#include "model_test_util.h"
#include "test_support.h"

namespace tqlab {
namespace {

ModelConfig small_llama() { return parse_model_config(testing::small_config("LlamaForCausalLM"), "m/config.json"); }

TEST(KvCachePlanTest, UniformSpecsShareOneQuantizerAndGetTheirCanonicalName) {
  const ModelConfig config = small_llama();  // 2 layers, 2 kv heads, head dim 16
  const KvCachePlan plan = plan_kv_cache(config, {"tq:b=3,block=16", {}, {}, "--k"}, {"tq:b=3", {}, {}, "--v"}, {});
  EXPECT_EQ(plan.k, "tq:b=3");  // block = head dim is the default: one name per configuration
  EXPECT_EQ(plan.v, "tq:b=3");
  ASSERT_EQ(plan.cache.key.size(), 2u);
  EXPECT_EQ(plan.cache.key[1][1], plan.cache.key[0][0]);
  EXPECT_EQ(plan.quantizers.size(), 2u);  // the two strings differ, the quantizers are built once each
}

TEST(KvCachePlanTest, PerLayerAndPerHeadSpecsAsASweepConfigWritesThem) {
  const ModelConfig config = small_llama();
  LayeredSpec k{"tq:b=3", {{1, "tq:b=4"}}, {{{0, 1}, "fp16"}}, "runs[0].k"};
  const KvCachePlan plan = plan_kv_cache(config, k, {"fp32", {}, {}, "runs[0].v"}, {2, 8, WindowMode::tail});
  EXPECT_EQ(plan.cache.key[0][0]->spec(), "tq:b=3");
  EXPECT_EQ(plan.cache.key[0][1]->spec(), "fp16");
  EXPECT_EQ(plan.cache.key[1][0]->spec(), "tq:b=4");
  EXPECT_EQ(plan.cache.key[1][1]->spec(), "tq:b=4");
  EXPECT_EQ(plan.k, R"({"default":"tq:b=3","layers":{"0":{"heads":{"1":"fp16"}},"1":"tq:b=4"}})");
  EXPECT_EQ(plan.cache.exact.sink, 2);
  EXPECT_EQ(plan.cache.exact.mode, WindowMode::tail);
}

TEST(KvCachePlanTest, RefusesSpecsTheModelCannotTakeNamingTheKey) {
  const ModelConfig config = small_llama();
  std::string message = testing::input_error_message(
      [&] { plan_kv_cache(config, {"q4_0", {}, {}, "--k"}, {"fp32", {}, {}, "--v"}, {}); });
  EXPECT_NE(message.find("--k: 'q4_0' for the head dim 16"), std::string::npos) << message;
  message = testing::input_error_message(
      [&] { plan_kv_cache(config, {"tq:b=3", {{5, "tq:b=4"}}, {}, "grid.k[0]"}, {"fp32", {}, {}, "--v"}, {}); });
  EXPECT_NE(message.find("grid.k[0].layers.5: the model has layers 0..1"), std::string::npos) << message;
  message = testing::input_error_message([&] {
    plan_kv_cache(config, {"fp32", {}, {}, "--k"}, {"nope", {}, {}, "--v"}, {});
  });
  EXPECT_NE(message.find("--v: 'nope'"), std::string::npos) << message;
}

}  // namespace
}  // namespace tqlab
