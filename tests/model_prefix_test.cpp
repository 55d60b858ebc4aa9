// A forward that starts at layer L from the residual stream a forward of the same tokens had
// there (model/transformer.h, ForwardOptions::first_layer) and the end-to-end session's runs
// that start at the first quantized layer (model/end_to_end.h, run(cache, first_layer)): the
// same floats as a whole forward, bit for bit, and refused where they would not be.
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/end_to_end.h"
#include "model/transformer.h"
#include "model_test_util.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

using testing::scratch_folder;
using testing::small_config;
using testing::write_checkpoint;

constexpr int kLayers = 3;

std::vector<std::int32_t> some_tokens(int count, int vocab) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
  for (int t = 0; t < count; ++t) tokens[static_cast<std::size_t>(t)] = (t * 53 + 7) % vocab;
  return tokens;
}

// Exact (fp32) everywhere but one (layer, kv head, role), which gets `spec`.
struct OneUnitCache {
  std::unique_ptr<Quantizer> exact = make_quantizer("fp32"), quantized;
  KvCacheQuantization plan;
  OneUnitCache(const ModelConfig& config, int layer, int head, Role role, const char* spec, std::uint64_t seed)
      : quantized(make_quantizer(spec)) {
    const std::vector<const Quantizer*> heads(static_cast<std::size_t>(config.kv_heads), exact.get());
    plan.key.assign(static_cast<std::size_t>(config.layers), heads);
    plan.value = plan.key;
    (role == Role::key ? plan.key : plan.value)[static_cast<std::size_t>(layer)][static_cast<std::size_t>(head)] =
        quantized.get();
    plan.seed = seed;
  }
};

class PrefixForwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nlohmann::json config = small_config("LlamaForCausalLM");
    config["num_hidden_layers"] = kLayers;
    dir_ = scratch_folder("prefix");
    write_checkpoint(dir_, config);
    checkpoint_ = Checkpoint::open(dir_);
    model_ = std::make_unique<Transformer>(*checkpoint_);
  }
  std::string dir_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<Transformer> model_;
};

TEST_F(PrefixForwardTest, StartingAtALayerFromItsInputGivesTheWholeForwardsFloats) {
  const ModelConfig& config = model_->config();
  const int n = 40;
  const std::vector<std::int32_t> tokens = some_tokens(n, config.vocab_size);
  const auto hidden_size = static_cast<std::size_t>(config.hidden_size);
  Workers workers(2);
  ForwardWorkspace workspace;

  // The exact forward, keeping each layer's input.
  std::vector<std::vector<float>> inputs(kLayers);
  ForwardOptions base;
  base.on_layer_input = [&](int layer, const float* x) {
    inputs[static_cast<std::size_t>(layer)].assign(x, x + n * hidden_size);
  };
  std::vector<float> exact(n * hidden_size);
  forward(*model_, tokens, base, workspace, workers, exact.data());

  for (int layer = 1; layer < kLayers; ++layer) {
    const OneUnitCache cache(config, layer, 1, Role::key, "tq:b=2", 3);
    KvCacheBytes whole_bytes, prefix_bytes;
    for (KvCacheBytes* bytes : {&whole_bytes, &prefix_bytes}) {
      bytes->key.assign(kLayers, 0);
      bytes->value = bytes->key_values = bytes->value_values = bytes->key;
    }
    ForwardOptions whole;
    whole.cache = &cache.plan;
    whole.bytes = &whole_bytes;
    std::vector<float> from_start(n * hidden_size), from_layer(n * hidden_size);
    forward(*model_, tokens, whole, workspace, workers, from_start.data());
    ForwardOptions prefix = whole;
    prefix.bytes = &prefix_bytes;
    prefix.first_layer = layer;
    prefix.first_input = inputs[static_cast<std::size_t>(layer)].data();
    forward(*model_, tokens, prefix, workspace, workers, from_layer.data());
    EXPECT_EQ(from_layer, from_start) << "layer " << layer;
    // The quantized head changes the output: the comparison above can fail.
    EXPECT_NE(from_start, exact) << "layer " << layer;
    // Per-head bytes add up to the layer's; the prefix run counts the layers it ran.
    const auto l = static_cast<std::size_t>(layer);
    EXPECT_EQ(whole_bytes.key_head[l][0] + whole_bytes.key_head[l][1], whole_bytes.key[l]);
    EXPECT_EQ(whole_bytes.key_head[l][1], 1u * n * (16 * 2 / 8 + 2));  // 2-bit codes + fp16 norm per token
    EXPECT_EQ(whole_bytes.key_head[l][0], 4u * n * 16);                // fp32
    EXPECT_EQ(prefix_bytes.key[l], whole_bytes.key[l]);
    EXPECT_EQ(prefix_bytes.key[0], 0u);
  }
  ForwardOptions unpaired;
  unpaired.first_layer = 1;  // without its input
  EXPECT_THROW(forward(*model_, tokens, unpaired, workspace, workers, exact.data()), InternalError);
}

TEST_F(PrefixForwardTest, SessionRunsFromTheFirstQuantizedLayerAreTheWholeRuns) {
  const ModelConfig& config = model_->config();
  std::vector<std::int32_t> tokens = some_tokens(3 * 32, config.vocab_size);
  EndToEndOptions options;
  options.ctx = 32;
  options.scoring = Scoring::all;
  options.threads = 2;
  options.keep_layer_inputs = true;
  EndToEndSession session(*model_, tokens, options, "tokens");
  for (int layer = 0; layer < kLayers; ++layer) {
    for (Role role : {Role::key, Role::value}) {
      const OneUnitCache cache(config, layer, 0, role, "tq:b=2,nc", 1);
      const RunSeedResult whole = session.run(cache.plan);
      const RunSeedResult prefix = session.run(cache.plan, layer);
      EXPECT_EQ(prefix.series.kld, whole.series.kld) << "layer " << layer;
      EXPECT_EQ(prefix.series.nll, whole.series.nll) << "layer " << layer;
      EXPECT_GT(whole.series.kld[5], 0.0);
      // Starting after the quantized layer would leave it out: refused.
      if (layer + 1 < kLayers) {
        EXPECT_THROW((void)session.run(cache.plan, layer + 1), InternalError);
      }
    }
  }
  options.keep_layer_inputs = false;
  EndToEndSession plain(*model_, tokens, options, "tokens");
  const OneUnitCache cache(config, 2, 0, Role::key, "tq:b=2,nc", 1);
  EXPECT_THROW((void)plain.run(cache.plan, 2), InternalError);
}

}  // namespace
}  // namespace tqlab
