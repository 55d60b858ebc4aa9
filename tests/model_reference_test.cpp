// The bundled model (data/tinyllama_hf) against what PyTorch computed on its
// sample windows: the post-RoPE q, k, v of every layer and the logits, to 1e-5
// of their largest magnitude. The PyTorch outputs live outside the repository
// (the shared data folder's tinyllama_hf/reference.safetensors); without them
// the test is skipped, saying so.
#include <cmath>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "io/tensor_file.h"
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "model_test_util.h"

namespace tqlab {
namespace {

const std::string kModel = std::string(TQLAB_SOURCE_DIR) + "/data/tinyllama_hf";
const std::string kReference = std::string(TQLAB_SHARED_DATA_DIR) + "/tinyllama_hf/reference.safetensors";

// max |a - b| / max |b| over a reference tensor's elements.
using testing::relative_max_error;

TEST(TinyLlamaReferenceTest, ForwardReproducesPyTorchLogitsAndPostRopeQkv) {
  if (!std::filesystem::exists(kReference)) GTEST_SKIP() << "PyTorch reference outputs not found at " << kReference;
  const auto reference = TensorFile::open(kReference);
  const auto checkpoint = Checkpoint::open(kModel);
  const Transformer model(*checkpoint);
  const ModelConfig& config = model.config();
  const TensorView& ids = reference->get("input_ids");
  ASSERT_EQ(ids.shape, (std::vector<std::int64_t>{8, 256}));
  const int chunks = 8, ctx = 256, dim = config.head_dim;

  // Per layer and role, every chunk's tensor in the reference's [seq, head, token, dim] order.
  const auto layer_tensor = [&](char role) {
    const int heads = role == 'q' ? config.q_heads : config.kv_heads;
    return std::vector<float>(static_cast<std::size_t>(chunks) * heads * ctx * dim);
  };
  std::vector<std::vector<float>> q, k, v;
  for (int layer = 0; layer < config.layers; ++layer) {
    q.push_back(layer_tensor('q'));
    k.push_back(layer_tensor('k'));
    v.push_back(layer_tensor('v'));
  }
  std::vector<float> logits(static_cast<std::size_t>(chunks) * ctx * config.vocab_size);
  ForwardWorkspace workspace;
  Workers workers(2);
  std::vector<float> hidden(static_cast<std::size_t>(ctx) * config.hidden_size);
  for (int chunk = 0; chunk < chunks; ++chunk) {
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(ctx));
    for (int t = 0; t < ctx; ++t)
      tokens[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(load_signed(ids, chunk * ctx + t));
    ForwardOptions options;
    options.on_qkv = [&](int layer, const float* qs, const float* ks, const float* vs) {
      // Token-major (token, head, dim) to the reference's (head, token, dim).
      const auto scatter = [&](const float* from, int heads, std::vector<float>& to) {
        for (int t = 0; t < ctx; ++t) {
          for (int h = 0; h < heads; ++h) {
            for (int d = 0; d < dim; ++d) {
              to[((static_cast<std::size_t>(chunk) * heads + h) * ctx + t) * dim + d] =
                  from[(static_cast<std::size_t>(t) * heads + h) * dim + d];
            }
          }
        }
      };
      scatter(qs, config.q_heads, q[static_cast<std::size_t>(layer)]);
      scatter(ks, config.kv_heads, k[static_cast<std::size_t>(layer)]);
      scatter(vs, config.kv_heads, v[static_cast<std::size_t>(layer)]);
    };
    forward(model, tokens, options, workspace, workers, hidden.data());
    output_logits(model, ctx, hidden.data(), logits.data() + static_cast<std::size_t>(chunk) * ctx * config.vocab_size,
                  workers);
  }
  const auto stored = [&](const std::string& name) {
    const TensorView& view = reference->get(name);
    std::vector<float> values(static_cast<std::size_t>(view.element_count()));
    read_all_floats(view, values.data());
    return values;
  };
  const double logits_error = relative_max_error(logits, stored("logits"));
  EXPECT_LT(logits_error, 1e-5);
  double qkv_error = 0;
  for (int layer = 0; layer < config.layers; ++layer) {
    const auto l = static_cast<std::size_t>(layer);
    for (const auto& [role, values] : {std::pair{'q', &q[l]}, std::pair{'k', &k[l]}, std::pair{'v', &v[l]}}) {
      const double error = relative_max_error(*values, stored("layers." + std::to_string(layer) + "." + role));
      EXPECT_LT(error, 1e-5) << "layer " << layer << " " << role;
      qkv_error = std::max(qkv_error, error);
    }
  }
  RecordProperty("logits_relative_max_error", std::to_string(logits_error));
  RecordProperty("qkv_relative_max_error", std::to_string(qkv_error));
  std::printf("logits: max |diff| / max |logit| = %.3g; q/k/v: %.3g\n", logits_error, qkv_error);
}

}  // namespace
}  // namespace tqlab
