#include "model/kv_dump_writer.h"

#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/tensor_stream_writer.h"
#include "model/chunking.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

std::string rope_scaling_json(const RopeConfig& rope) {
  switch (rope.scaling) {
    case RopeConfig::Scaling::none:
      return "null";
    case RopeConfig::Scaling::linear:
      return nlohmann::json{{"rope_type", "linear"}, {"factor", rope.factor}}.dump();
    case RopeConfig::Scaling::llama3:
      return nlohmann::json{{"rope_type", "llama3"},
                            {"factor", rope.factor},
                            {"low_freq_factor", rope.low_freq_factor},
                            {"high_freq_factor", rope.high_freq_factor},
                            {"original_max_position_embeddings", rope.original_max_position_embeddings}}
          .dump();
    case RopeConfig::Scaling::factors:
      return nlohmann::json{{"rope_type", "gguf_rope_freqs"}, {"factors", rope.frequency_factors}}.dump();
  }
  return "null";
}

// Python's repr of a float: the shortest form that reads back (what tools/dump_kv.py writes).
std::string python_repr(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

void to_head_major(int tokens, int heads, int dim, const float* in, float* out) {
  const auto row = static_cast<std::size_t>(dim) * sizeof(float);
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < tokens; ++t) {
      std::memcpy(out + (static_cast<std::size_t>(h) * tokens + t) * dim,
                  in + (static_cast<std::size_t>(t) * heads + h) * dim, row);
    }
  }
}

namespace {

// The layers to write: options.layers (each checked against the model) or every layer.
std::vector<int> dumped_layers(const ModelConfig& config, const KvDumpWriteOptions& options) {
  if (!options.layers) {
    std::vector<int> layers;
    for (int layer = 0; layer < config.layers; ++layer) layers.push_back(layer);
    return layers;
  }
  for (int layer : *options.layers) {
    if (layer < 0 || layer >= config.layers)
      fail("--layers: the model has layers 0..{}, not {}", config.layers - 1, layer);
  }
  return *options.layers;
}

// The dump's tensors, in the order tools/dump_kv.py writes them: per layer q, k, v; then the ids (and logits).
struct DumpTensors {
  std::vector<TensorToWrite> tensors;
  std::map<int, std::size_t> first_of_layer;  // layer -> index of its q tensor
  std::size_t ids = 0, logits = 0;            // indices of input_ids and logits
};

DumpTensors dump_tensors(const ModelConfig& config, const KvDumpSummary& summary, const KvDumpWriteOptions& options) {
  const int chunks = summary.chunks, ctx = summary.ctx, dim = config.head_dim;
  DumpTensors out;
  for (int layer : summary.layers) {
    out.first_of_layer[layer] = out.tensors.size();
    out.tensors.push_back({fmt::format("layers.{}.q", layer), options.dtype, {chunks, config.q_heads, ctx, dim}, {}});
    out.tensors.push_back({fmt::format("layers.{}.k", layer), options.dtype, {chunks, config.kv_heads, ctx, dim}, {}});
    out.tensors.push_back({fmt::format("layers.{}.v", layer), options.dtype, {chunks, config.kv_heads, ctx, dim}, {}});
  }
  out.ids = out.tensors.size();
  out.tensors.push_back({"input_ids", DType::i64, {chunks, ctx}, {}});
  out.logits = out.tensors.size();
  if (options.logits) out.tensors.push_back({"logits", DType::f32, {chunks, ctx, config.vocab_size}, {}});
  return out;
}

// The metadata a KV dump carries (docs/DUMPING.md): its layout and templates, the model's
// attention shape and RoPE, and where the dump came from.
std::map<std::string, std::string> dump_metadata(const ModelConfig& config, const KvDumpSummary& summary,
                                                 const KvDumpWriteOptions& options) {
  const int dim = config.head_dim;
  std::map<std::string, std::string> metadata{
      {"layout", "seq head token dim"},
      {"keys", "layers.{layer}.k"},
      {"values", "layers.{layer}.v"},
      {"queries", "layers.{layer}.q"},
      {"layers", std::to_string(summary.layers.size())},
      {"batch", std::to_string(summary.chunks)},
      {"tokens", std::to_string(summary.ctx)},
      {"kv_heads", std::to_string(config.kv_heads)},
      {"q_heads", std::to_string(config.q_heads)},
      {"key_dim", std::to_string(dim)},
      {"value_dim", std::to_string(dim)},
      {"attention_scale", python_repr(1.0 / std::sqrt(static_cast<double>(dim)))},
      {"attention_scale_source", "1/sqrt(head_dim)"},
      {"rope_theta", python_repr(config.rope.theta)},
      {"rope_scaling", rope_scaling_json(config.rope)},
      {"source", "tqlab dump"},
      {"model", options.model_path},
      {"architecture", config.architecture},
      {"dtype", std::string(dtype_name(options.dtype))},
      {"text", options.tokens_path},
      {"tokens_sha256", options.tokens_sha256},
      {"ctx", std::to_string(summary.ctx)},
      {"bos", options.bos ? "true" : "false"},
      {"tqlab.version", TQLAB_VERSION},
      {"tqlab.git_commit", TQLAB_GIT_COMMIT},
  };
  if (!options.tokenizer_sha256.empty()) metadata["tokenizer_sha256"] = options.tokenizer_sha256;
  metadata.insert(options.metadata.begin(), options.metadata.end());
  return metadata;
}

}  // namespace

KvDumpSummary write_model_kv_dump(const Transformer& model, const std::vector<std::int32_t>& tokens,
                                  const std::string& path, const KvDumpWriteOptions& options) {
  const ModelConfig& config = model.config();
  const int ctx = options.ctx;
  const int chunks =
      plan_chunks(config, tokens.size(), options.tokens_path, ctx, options.chunks, options.bos, 1, options.names);
  if (options.dtype != DType::f16 && options.dtype != DType::bf16 && options.dtype != DType::f32) {
    fail("--dtype {}: a dump stores f16, bf16 or f32", dtype_name(options.dtype));
  }
  KvDumpSummary summary;
  summary.ctx = ctx;
  summary.chunks = chunks;
  summary.layers = dumped_layers(config, options);
  const int dim = config.head_dim;
  const DumpTensors layout = dump_tensors(config, summary, options);
  TensorStreamWriter writer(path, layout.tensors, dump_metadata(config, summary, options), Durability::page_cache);

  Workers workers(options.threads);
  ForwardWorkspace workspace;
  std::vector<float> hidden(static_cast<std::size_t>(ctx) * config.hidden_size);
  std::vector<float> logits(options.logits ? static_cast<std::size_t>(ctx) * config.vocab_size : 0);
  std::vector<float> head_major;
  const auto element = dtype_size(options.dtype);
  KvCacheBytes cache_bytes;  // with options.cache: the hook's count, which a dump does not report
  cache_bytes.key = cache_bytes.value = cache_bytes.key_values = cache_bytes.value_values =
      std::vector<std::uint64_t>(static_cast<std::size_t>(config.layers), 0);
  for (int chunk = 0; chunk < chunks; ++chunk) {
    std::vector<std::int32_t> ids(tokens.begin() + static_cast<std::ptrdiff_t>(chunk) * ctx,
                                  tokens.begin() + static_cast<std::ptrdiff_t>(chunk + 1) * ctx);
    if (options.bos) ids[0] = static_cast<std::int32_t>(*config.bos_token_id);
    ForwardOptions forward_options;
    forward_options.cache = options.cache;
    forward_options.bytes = &cache_bytes;
    forward_options.on_qkv = [&](int layer, const float* q, const float* k, const float* v) {
      const auto at = layout.first_of_layer.find(layer);
      if (at == layout.first_of_layer.end()) return;
      const std::pair<const float*, int> roles[] = {{q, config.q_heads}, {k, config.kv_heads}, {v, config.kv_heads}};
      for (std::size_t r = 0; r < 3; ++r) {
        const auto [data, heads] = roles[r];
        const std::size_t count = static_cast<std::size_t>(heads) * ctx * dim;
        head_major.resize(count);
        to_head_major(ctx, heads, dim, data, head_major.data());
        const std::vector<std::byte> bytes = encode_floats(head_major, options.dtype);
        writer.write(at->second + r, static_cast<std::uint64_t>(chunk) * count * element, bytes);
      }
    };
    forward(model, ids, forward_options, workspace, workers, hidden.data());
    std::vector<std::int64_t> wide(ids.begin(), ids.end());
    std::vector<std::byte> id_bytes(wide.size() * sizeof(std::int64_t));
    std::memcpy(id_bytes.data(), wide.data(), id_bytes.size());
    writer.write(layout.ids, static_cast<std::uint64_t>(chunk) * id_bytes.size(), id_bytes);
    if (options.logits) {
      output_logits(model, ctx, hidden.data(), logits.data(), workers);
      const std::vector<std::byte> bytes = encode_floats(logits, DType::f32);
      writer.write(layout.logits, static_cast<std::uint64_t>(chunk) * bytes.size(), bytes);
    }
    if (options.on_chunk) options.on_chunk(chunk + 1, chunks);
  }
  writer.commit();
  for (std::size_t i = 0; i < layout.tensors.size(); ++i) summary.bytes += writer.tensor_bytes(i);
  return summary;
}

}  // namespace tqlab
