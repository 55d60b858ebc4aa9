// tqlab dump's file and the KV hook against the dump path: the dump holds the
// forward's own q, k, v (head-major, per chunk), and the hook quantizes a
// layer's cache exactly as a sweep quantizes the dump's slabs (the same
// fake_quantize_rows, the same contexts {seed, role, layer, kv head}).
#include <vector>

#include <gtest/gtest.h>

#include "kv/kv_slab.h"
#include "kv/kv_dump.h"
#include "model/checkpoint.h"
#include "model/kv_dump_writer.h"
#include "model/kv_hook.h"
#include "model/transformer.h"
#include "model_test_util.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

TEST(ModelDumpTest, DumpHoldsTheForwardsQkvAndTheHookQuantizesAsTheSweepDoes) {
  const std::string dir = testing::scratch_folder("model");
  testing::write_checkpoint(dir, testing::small_config("Qwen3ForCausalLM"));
  const auto checkpoint = Checkpoint::open(dir);
  const Transformer model(*checkpoint);
  const ModelConfig& config = model.config();
  const int ctx = 40, chunks = 2, dim = config.head_dim;
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(ctx * chunks));
  for (std::size_t t = 0; t < tokens.size(); ++t)
    tokens[t] = static_cast<std::int32_t>((t * 13 + 5) % config.vocab_size);

  const std::string path = dir + "/kv.safetensors";
  KvDumpWriteOptions options;
  options.ctx = ctx;
  options.dtype = DType::f32;
  options.threads = 2;
  write_model_kv_dump(model, tokens, path, options);
  const auto file = TensorFile::open(path);
  KvDumpSpec spec;
  spec.layout = resolve_kv_layout(*file, "", "layout").layout;
  spec.queries = "layers.{layer}.q";
  const KvDump dump(*file, spec);
  ASSERT_EQ(dump.layers().size(), static_cast<std::size_t>(config.layers));
  ASSERT_EQ(dump.layers()[0].seqs, chunks);

  const auto quantizer = make_quantizer("tq:b=3");
  for (int chunk = 0; chunk < chunks; ++chunk) {
    std::vector<std::int32_t> ids(tokens.begin() + chunk * ctx, tokens.begin() + (chunk + 1) * ctx);
    std::vector<float> k0, v0;
    ForwardOptions forward_options;
    forward_options.on_qkv = [&](int layer, const float* q, const float* k, const float* v) {
      const std::size_t kv_size = static_cast<std::size_t>(ctx) * config.kv_heads * dim;
      if (layer == 0) {
        k0.assign(k, k + kv_size);
        v0.assign(v, v + kv_size);
      }
      // The dump holds these floats, head-major, in sequence `chunk`.
      std::vector<float> slab;
      for (int head = 0; head < config.q_heads; ++head) {
        read_slab(dump, {Role::query, layer, chunk, head}, slab);
        for (int t = 0; t < ctx; ++t) {
          for (int d = 0; d < dim; ++d) {
            ASSERT_EQ(slab[static_cast<std::size_t>(t * dim + d)],
                      q[(static_cast<std::size_t>(t) * config.q_heads + head) * dim + d]);
          }
        }
      }
    };
    ForwardWorkspace workspace;
    Workers workers(1);
    std::vector<float> hidden(static_cast<std::size_t>(ctx) * config.hidden_size);
    forward(model, ids, forward_options, workspace, workers, hidden.data());

    // Layer 0's cache through the hook, and the dump's layer-0 slabs through the sweep's function.
    KvCacheQuantization cache;
    cache.key.assign(static_cast<std::size_t>(config.layers),
                     std::vector<const Quantizer*>(static_cast<std::size_t>(config.kv_heads), quantizer.get()));
    cache.value = cache.key;
    cache.seed = 7;
    KvCacheBytes bytes;
    bytes.key.assign(static_cast<std::size_t>(config.layers), 0);
    bytes.value = bytes.key_values = bytes.value_values = bytes.key;
    std::vector<float> k_cache(k0.size()), v_cache(v0.size());
    const std::int64_t stride = static_cast<std::int64_t>(config.kv_heads) * dim;
    fill_layer_cache(cache, 0, ctx, config.kv_heads, dim, stride, k0.data(), v0.data(), k_cache.data(), v_cache.data(),
                     bytes, "test", workers);
    std::size_t slab_bytes = 0;
    for (const Role role : {Role::key, Role::value}) {
      for (int head = 0; head < config.kv_heads; ++head) {
        const KvSlab slab{role, 0, chunk, head};
        std::vector<float> x, decoded(static_cast<std::size_t>(ctx) * dim);
        read_slab(dump, slab, x);
        slab_bytes += fake_quantize(dump, slab, *quantizer, 7, x.data(), decoded.data());
        const std::vector<float>& hooked = role == Role::key ? k_cache : v_cache;
        for (int t = 0; t < ctx; ++t) {
          for (int d = 0; d < dim; ++d) {
            ASSERT_EQ(decoded[static_cast<std::size_t>(t * dim + d)],
                      hooked[static_cast<std::size_t>(t * stride + head * dim + d)])
                << "chunk " << chunk << " " << role_name(role) << " head " << head << " token " << t;
          }
        }
      }
    }
    EXPECT_EQ(slab_bytes, bytes.key[0] + bytes.value[0]);
  }
}

}  // namespace
}  // namespace tqlab
