// The vllm engine (engine/vllm_engine.h): its spellings, what it refuses, which layers it keeps
// unquantized, and how a run's --prefill becomes vLLM's rule for each prefill piece, held to the
// preset table's own rule (quant/vllm_presets.h, vllm_chunk_reads_own_tokens_exact) piece by piece.
// tests/cli/ppl_vllm.sh runs it end to end.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/vllm_engine.h"
#include "model/kv_cache_plan.h"
#include "model_test_util.h"
#include "quant/vllm_presets.h"
#include "test_support.h"

namespace tqlab {
namespace {

TEST(VllmEngineTest, SpellingsAndPresets) {
  EXPECT_EQ(canonical_engine("vllm", "--engine"), "vllm");
  EXPECT_EQ(canonical_engine("vllm:preset=fp8", "--engine"), "vllm:preset=fp8");
  EXPECT_EQ(engine_with_preset("vllm", "turboquant_4bit_nc", "--preset"), "vllm:preset=turboquant_4bit_nc");
  EXPECT_EQ(engine_with_preset("vllm:preset=fp8", "turboquant_k8v4", "--preset"), "vllm:preset=turboquant_k8v4");
  EXPECT_EQ(engine_with_preset("llama.cpp", "", "--preset"), "llama.cpp");
  EXPECT_THROW(canonical_engine("vllm:preset=fp4", "--engine"), InputError);
  EXPECT_THROW(canonical_engine("vllm:rot=off", "--engine"), InputError);
  const std::string message =
      testing::input_error_message([] { engine_with_preset("llama.cpp", "fp8", "--preset"); });
  EXPECT_NE(message.find("presets are engine vllm's"), std::string::npos) << message;
  EXPECT_NE(message.find("engine llama.cpp takes"), std::string::npos) << message;
  EXPECT_THROW(engine_with_preset("tqlab", "fp8", "--preset"), InputError);
  EXPECT_THROW(engine_with_preset("vllm", "turboquant_2bit", "--preset"), InputError);
}

// skip=L+L+... is vLLM's --kv-cache-dtype-skip-layers: more layers kept at the model's precision.
TEST(VllmEngineTest, SkipLayers) {
  EXPECT_EQ(canonical_engine("vllm:skip=5+0+5,preset=fp8", "--engine"), "vllm:preset=fp8,skip=0+5");
  EXPECT_EQ(engine_with_preset("vllm:preset=fp8,skip=3", "turboquant_4bit_nc", "--preset"),
            "vllm:preset=turboquant_4bit_nc,skip=3");
  for (const char* bad :
       {"vllm:skip=", "vllm:skip=a", "vllm:skip=1++2", "vllm:skip=-1", "vllm:skip=2+", "vllm:skip=70000"}) {
    EXPECT_THROW(canonical_engine(bad, "--engine"), InputError) << bad;
  }
  EXPECT_EQ(parse_engine("vllm:preset=turboquant_3bit_nc,skip=2", "")->unquantized_layers(6),
            (std::vector<int>{0, 1, 2, 4, 5}));
  EXPECT_EQ(parse_engine("vllm:preset=fp8,skip=1+3", "")->unquantized_layers(6), (std::vector<int>{1, 3}));
  EXPECT_THROW(parse_engine("vllm:preset=fp8,skip=6", "")->unquantized_layers(6), InputError);
}

TEST(VllmEngineTest, TheRunMayOnlyRepeatThePresetsSpecs) {
  for (const VllmPreset& preset : vllm_presets()) {
    const auto engine = parse_engine("vllm:preset=" + std::string(preset.name), "--engine");
    EngineRunRequest request;
    request.k = engine->defined_specs().k;
    request.v = engine->defined_specs().v;
    EXPECT_EQ(request.k, preset.key_spec);
    EXPECT_EQ(request.v, preset.value_spec);
    request.where = "--k/--v";
    EXPECT_NO_THROW(engine->check_run(request)) << preset.name;
    EngineRunRequest other = request;
    other.v = "fp16";
    EXPECT_THROW(engine->check_run(other), InputError) << preset.name;
    other = request;
    other.per_layer = true;
    EXPECT_THROW(engine->check_run(other), InputError) << preset.name;
    other = request;
    other.window = 16;
    EXPECT_THROW(engine->check_run(other), InputError) << preset.name;
    other = request;
    other.sink = 4;
    EXPECT_THROW(engine->check_run(other), InputError) << preset.name;
  }
  EngineRunRequest request;
  request.k = request.v = "fp32";
  const std::string message = testing::input_error_message([&] { parse_engine("vllm", "")->check_run(request); });
  EXPECT_NE(message.find("no preset"), std::string::npos) << message;
  EXPECT_NE(message.find("turboquant_k3v4_nc"), std::string::npos) << message;
}

TEST(VllmEngineTest, TurboQuantKeepsTwoLayersAtEachEndFp8None) {
  const auto tq = parse_engine("vllm:preset=turboquant_3bit_nc", "");
  EXPECT_EQ(tq->unquantized_layers(6), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(tq->unquantized_layers(4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(tq->unquantized_layers(3), (std::vector<int>{0, 2}));
  EXPECT_EQ(tq->unquantized_layers(1), (std::vector<int>{}));
  EXPECT_EQ(parse_engine("vllm:preset=fp8", "")->unquantized_layers(6), (std::vector<int>{}));
  EXPECT_EQ(parse_engine("llama.cpp", "")->unquantized_layers(6), (std::vector<int>{}));
}

TEST(VllmEngineTest, DefaultPrefillIsOnePrefillOfTheChunk) {
  EXPECT_EQ(parse_engine("vllm:preset=fp8", "")->default_prefill(256), PrefillRule{256});
  EXPECT_EQ(parse_engine("vllm:preset=turboquant_k8v4", "")->default_prefill(512), PrefillRule{512});
  EXPECT_EQ(parse_engine("tqlab", "")->default_prefill(256), PrefillRule{});
  EXPECT_EQ(parse_engine("llama.cpp", "")->default_prefill(256), PrefillRule{});
  // The other engines' attention applies what the run asks for.
  EXPECT_EQ(parse_engine("llama.cpp", "")->attention_prefill(PrefillRule{64}), PrefillRule{64});
}

// Every query of a chunk split into pieces of C tokens reads its own piece exact exactly when the
// preset table says that piece attends its own tokens exact; earlier pieces never.
// A vllm run's "quantized" is no default: results and ids must say it, or a config read back from
// them would give the run its engine's default (one prefill of each chunk).
TEST(VllmEngineTest, PrefillIsWrittenUnlessItIsTheEnginesQuantizedDefault) {
  EXPECT_FALSE(prefill_written("tqlab", PrefillRule{}));
  EXPECT_FALSE(prefill_written("llama.cpp", PrefillRule{}));
  EXPECT_TRUE(prefill_written("llama.cpp", PrefillRule{64}));
  EXPECT_TRUE(prefill_written("vllm:preset=fp8", PrefillRule{}));
  EXPECT_TRUE(prefill_written("vllm:preset=turboquant_4bit_nc", PrefillRule{256}));
}

TEST(VllmEngineTest, EachPieceFollowsThePresetsPrefillRule) {
  for (const VllmPreset& preset : vllm_presets()) {
    const auto engine = parse_engine("vllm:preset=" + std::string(preset.name), "");
    for (const int tokens : {1, 64, 127, 256, 300, 320, 385}) {
      for (const int chunk : {1, 16, 64, 100, 128, 129, 160, 256, 512}) {
        const PrefillRule rule = engine->attention_prefill(PrefillRule{chunk});
        for (int t = 0; t < tokens; ++t) {
          const int start = t - t % chunk;
          const int length = std::min(chunk, tokens - start);
          const bool own_exact = vllm_chunk_reads_own_tokens_exact(preset, start, length);
          ASSERT_EQ(rule.first_exact_key(t, tokens), own_exact ? start : t + 1)
              << preset.name << " tokens " << tokens << " pieces of " << chunk << " query " << t;
        }
      }
      // "quantized": every query reads the cache, its own token too.
      const PrefillRule quantized = engine->attention_prefill(PrefillRule{});
      for (int t = 0; t < tokens; ++t) ASSERT_EQ(quantized.first_exact_key(t, tokens), t + 1);
    }
  }
}

TEST(VllmEngineTest, SpelledRulesKeepTheirMeaning) {
  // A rule the user spells reads every piece exact, the last short one too.
  const PrefillRule rule = parse_prefill("exact 100", "--prefill");
  EXPECT_EQ(rule.first_exact_key(250, 256), 200);
  EXPECT_EQ(rule.first_exact_key(150, 256), 100);
  EXPECT_EQ(rule.spelling(), "exact 100");
}

TEST(VllmEngineTest, PlanKeepsBoundaryLayersAtFp16AndRecordsThePresetsSpecs) {
  nlohmann::json json = testing::small_config("LlamaForCausalLM");
  json["num_hidden_layers"] = 6;
  json["hidden_size"] = 256;
  json["head_dim"] = 64;
  const ModelConfig config = parse_model_config(json, "m/config.json");
  const VllmPreset& preset = find_vllm_preset("turboquant_4bit_nc");
  const std::string k(preset.key_spec), v(preset.value_spec);
  const KvCachePlan plan = plan_kv_cache(config, {k, {}, {}, "--k"}, {v, {}, {}, "--v"}, {},
                                         "vllm:preset=turboquant_4bit_nc", PrefillRule{64}, "--k/--v");
  EXPECT_EQ(plan.k, k);
  EXPECT_EQ(plan.v, v);
  ASSERT_EQ(plan.cache.key.size(), 6u);
  for (int layer = 0; layer < 6; ++layer) {
    const bool quantized = layer == 2 || layer == 3;
    for (int head = 0; head < config.kv_heads; ++head) {
      const auto l = static_cast<std::size_t>(layer);
      const auto h = static_cast<std::size_t>(head);
      EXPECT_EQ(plan.cache.key[l][h]->spec(), quantized ? k : "fp16") << layer;
      EXPECT_EQ(plan.cache.value[l][h]->spec(), quantized ? v : "fp16") << layer;
    }
  }
  EXPECT_EQ(plan.cache.prefill, (PrefillRule{64, 128}));
  EXPECT_TRUE(plan.engines.empty());  // attention is tqlab's, over the cache the specs decode
}

}  // namespace
}  // namespace tqlab
