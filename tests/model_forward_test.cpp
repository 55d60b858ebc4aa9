// The whole forward pass against the plain double-precision reference
// (tests/forward_reference.h) on random checkpoints of every family and
// weight dtype, with and without a fake-quantized KV cache; the same floats
// for any thread count.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "model/checkpoint.h"
#include "forward_reference.h"
#include "model/transformer.h"
#include "model_test_util.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

using testing::CheckpointOptions;
using testing::scratch_folder;
using testing::small_config;
using testing::write_checkpoint;

using testing::relative_max_error;

std::vector<std::int32_t> some_tokens(int count, int vocab) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
  for (int t = 0; t < count; ++t) tokens[static_cast<std::size_t>(t)] = (t * 37 + 11) % vocab;
  return tokens;
}

struct FastForward {
  std::vector<float> logits;
  std::vector<std::vector<float>> q, k, v;
  KvCacheBytes bytes;
};

FastForward run_forward(const Transformer& model, const std::vector<std::int32_t>& tokens, int threads,
                        const KvCacheQuantization* cache = nullptr) {
  const ModelConfig& config = model.config();
  const int n = static_cast<int>(tokens.size());
  FastForward out;
  ForwardOptions options;
  options.cache = cache;
  out.bytes.key.assign(static_cast<std::size_t>(config.layers), 0);
  out.bytes.value = out.bytes.key_values = out.bytes.value_values = out.bytes.key;
  options.bytes = &out.bytes;
  const std::size_t q_size = static_cast<std::size_t>(n) * config.q_heads * config.head_dim;
  const std::size_t kv_size = static_cast<std::size_t>(n) * config.kv_heads * config.head_dim;
  options.on_qkv = [&](int, const float* q, const float* k, const float* v) {
    out.q.emplace_back(q, q + q_size);
    out.k.emplace_back(k, k + kv_size);
    out.v.emplace_back(v, v + kv_size);
  };
  ForwardWorkspace workspace;
  Workers workers(threads);
  std::vector<float> hidden(static_cast<std::size_t>(n) * config.hidden_size);
  forward(model, tokens, options, workspace, workers, hidden.data());
  out.logits.resize(static_cast<std::size_t>(n) * config.vocab_size);
  output_logits(model, n, hidden.data(), out.logits.data(), workers);
  return out;
}

struct FamilyCase {
  const char* architecture;
  DType dtype;
};

class ForwardFamilyTest : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(ForwardFamilyTest, MatchesTheDoubleReferenceAndIsThreadInvariant) {
  const std::string dir = scratch_folder("model");
  CheckpointOptions options;
  options.dtype = GetParam().dtype;
  write_checkpoint(dir, small_config(GetParam().architecture), options);
  const auto checkpoint = Checkpoint::open(dir);
  const Transformer model(*checkpoint);
  const std::vector<std::int32_t> tokens = some_tokens(75, model.config().vocab_size);  // > one attention block
  const ReferenceForward reference = forward_reference(model, tokens);
  const FastForward one = run_forward(model, tokens, 1);
  const FastForward three = run_forward(model, tokens, 3);
  EXPECT_LT(relative_max_error(one.logits, reference.logits), 2e-5);
  for (int layer = 0; layer < model.config().layers; ++layer) {
    const auto l = static_cast<std::size_t>(layer);
    EXPECT_LT(relative_max_error(one.q[l], reference.q[l]), 2e-5) << "layer " << layer;
    EXPECT_LT(relative_max_error(one.k[l], reference.k[l]), 2e-5) << "layer " << layer;
    EXPECT_LT(relative_max_error(one.v[l], reference.v[l]), 2e-5) << "layer " << layer;
  }
  EXPECT_EQ(one.logits, three.logits);
}

INSTANTIATE_TEST_SUITE_P(
    Families, ForwardFamilyTest,
    ::testing::Values(FamilyCase{"LlamaForCausalLM", DType::f32}, FamilyCase{"LlamaForCausalLM", DType::bf16},
                      FamilyCase{"MistralForCausalLM", DType::f16}, FamilyCase{"Qwen2ForCausalLM", DType::f32},
                      FamilyCase{"Qwen3ForCausalLM", DType::f32}),
    [](const auto& info) {
      return std::string(info.param.architecture) + "_" + std::string(dtype_name(info.param.dtype));
    });

TEST(ForwardTest, Llama3RopeAndBiasesMatchTheReference) {
  nlohmann::json config = small_config("LlamaForCausalLM");
  config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
  config["attention_bias"] = true;
  config["mlp_bias"] = true;
  const std::string dir = scratch_folder("model");
  write_checkpoint(dir, config);
  const auto checkpoint = Checkpoint::open(dir);
  const Transformer model(*checkpoint);
  const std::vector<std::int32_t> tokens = some_tokens(90, model.config().vocab_size);
  EXPECT_LT(relative_max_error(run_forward(model, tokens, 2).logits, forward_reference(model, tokens).logits), 2e-5);
}

// Specs per role as a cache plan would build them; every (layer, head) the same.
struct Cache {
  std::unique_ptr<Quantizer> key, value;
  KvCacheQuantization plan;
  Cache(const ModelConfig& config, const char* k_spec, const char* v_spec, ExactTokens exact, std::uint64_t seed)
      : key(make_quantizer(k_spec)), value(make_quantizer(v_spec)) {
    plan.key.assign(static_cast<std::size_t>(config.layers),
                    std::vector<const Quantizer*>(static_cast<std::size_t>(config.kv_heads), key.get()));
    plan.value.assign(static_cast<std::size_t>(config.layers),
                      std::vector<const Quantizer*>(static_cast<std::size_t>(config.kv_heads), value.get()));
    plan.exact = exact;
    plan.seed = seed;
  }
};

struct HookCase {
  const char* name;
  ExactTokens exact;
};

class KvHookTest : public ::testing::TestWithParam<HookCase> {};

// The hook's sinks and windows are the sweep's ExactTokens ranges, query by query, as the reference decides them.
TEST_P(KvHookTest, QuantizedCacheMatchesTheReference) {
  const std::string dir = scratch_folder("model");
  write_checkpoint(dir, small_config("LlamaForCausalLM"));
  const auto checkpoint = Checkpoint::open(dir);
  const Transformer model(*checkpoint);
  const std::vector<std::int32_t> tokens = some_tokens(80, model.config().vocab_size);
  const Cache cache(model.config(), "tq:b=2", "tq:b=2", GetParam().exact, 5);
  const FastForward one = run_forward(model, tokens, 1, &cache.plan);
  const FastForward three = run_forward(model, tokens, 3, &cache.plan);
  const ReferenceForward reference = forward_reference(model, tokens, &cache.plan);
  EXPECT_LT(relative_max_error(one.logits, reference.logits), 1e-4);
  EXPECT_EQ(one.logits, three.logits);
  // The cache's bytes: every (chunk, layer, head) of keys and values, 2-bit codes plus fp16 norms.
  for (int layer = 0; layer < 2; ++layer) {
    EXPECT_EQ(one.bytes.key_values[static_cast<std::size_t>(layer)], 80u * 2 * 16);
    EXPECT_EQ(one.bytes.key[static_cast<std::size_t>(layer)], 2u * 80 * (16 * 2 / 8 + 2));
  }
  // Quantization at 2 bits moves the output far beyond the tolerance: the comparison above can fail.
  const ReferenceForward exact = forward_reference(model, tokens);
  EXPECT_GT(relative_max_error(exact.logits, reference.logits), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(ExactTokens, KvHookTest,
                         ::testing::Values(HookCase{"none", {}}, HookCase{"sink4", {4, 0, WindowMode::recent}},
                                           HookCase{"recent16", {0, 16, WindowMode::recent}},
                                           HookCase{"tail16", {0, 16, WindowMode::tail}},
                                           HookCase{"sink2_recent70", {2, 70, WindowMode::recent}},
                                           HookCase{"sink3_tail8", {3, 8, WindowMode::tail}}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(KvHookTest, WindowsChangeWhatTheModelComputes) {
  const std::string dir = scratch_folder("model");
  write_checkpoint(dir, small_config("LlamaForCausalLM"));
  const auto checkpoint = Checkpoint::open(dir);
  const Transformer model(*checkpoint);
  const std::vector<std::int32_t> tokens = some_tokens(80, model.config().vocab_size);
  const auto logits = [&](ExactTokens exact) {
    const Cache cache(model.config(), "tq:b=2", "tq:b=2", exact, 5);
    return run_forward(model, tokens, 2, &cache.plan).logits;
  };
  const std::vector<float> none = logits({}), recent = logits({0, 16, WindowMode::recent}),
                           tail = logits({0, 16, WindowMode::tail}), everything = logits({0, 80, WindowMode::tail});
  EXPECT_GT(relative_max_error(recent, none), 1e-3);
  EXPECT_GT(relative_max_error(tail, recent), 1e-3);
  // A window over the whole chunk keeps the cache exact: the base model's logits.
  EXPECT_EQ(everything, run_forward(model, tokens, 2).logits);
}

TEST(KvHookTest, Fp32CacheIsTheExactCacheAndSeedsMatterOnlyToRandomizedSpecs) {
  const std::string dir = scratch_folder("model");
  write_checkpoint(dir, small_config("Qwen3ForCausalLM"));
  const auto checkpoint = Checkpoint::open(dir);
  const Transformer model(*checkpoint);
  const std::vector<std::int32_t> tokens = some_tokens(40, model.config().vocab_size);
  const std::vector<float> base = run_forward(model, tokens, 1).logits;
  const Cache fp32(model.config(), "fp32", "fp32", {}, 0);
  EXPECT_EQ(run_forward(model, tokens, 1, &fp32.plan).logits, base);
  const Cache seed0(model.config(), "tq:b=3", "tq:b=3", {}, 0), seed1(model.config(), "tq:b=3", "tq:b=3", {}, 1);
  EXPECT_NE(run_forward(model, tokens, 1, &seed0.plan).logits, run_forward(model, tokens, 1, &seed1.plan).logits);
}

}  // namespace
}  // namespace tqlab
