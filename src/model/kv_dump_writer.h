// A KV dump made by the model's own forward pass, without PyTorch: the
// post-RoPE queries, keys and values of every (selected) layer for chunks of
// tokens, in the file layout tools/dump_kv.py writes, so that `tqlab inspect`,
// `sweep` and `roundtrip` read it with their defaults.
//
//   layers.{L}.q   [chunks, q_heads, ctx, head_dim]   post-RoPE, before the 1/sqrt(head_dim) scale
//   layers.{L}.k   [chunks, kv_heads, ctx, head_dim]  post-RoPE (what the cache holds)
//   layers.{L}.v   [chunks, kv_heads, ctx, head_dim]
//   input_ids      [chunks, ctx] I64                  the tokens the model read (BOS in place with --bos)
//   logits         [chunks, ctx, vocab] F32           with `logits`: logits[c, t] predicts input_ids[c, t + 1]
//   __metadata__   layout "seq head token dim", the name templates keys/values/queries, layers, batch,
//                  tokens, kv_heads, q_heads, key_dim, value_dim, attention_scale and its source,
//                  rope_theta, rope_scaling, the model's path and architecture, the dtype, the token
//                  file and its sha256, tqlab's version and commit
// Each chunk is one sequence (`seq`): attention never crosses chunks. The
// file is streamed (io/tensor_stream_writer.h): one chunk's tensors in memory
// at a time, the whole written atomically.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/chunking.h"
#include "model/transformer.h"

namespace tqlab {

struct KvDumpWriteOptions {
  int ctx = 512;
  int chunks = 0;  ///< 0: every whole chunk
  bool bos = false;
  std::optional<std::vector<int>> layers;  ///< nullopt: every layer
  DType dtype = DType::f16;                ///< of q, k and v: f16, bf16 or f32
  bool logits = false;
  int threads = 0;
  std::string model_path;                  ///< as given, for the metadata
  std::string tokens_path, tokens_sha256;  ///< for the metadata: the token file (or text) and its sha256
  std::string tokenizer_sha256;            ///< for the metadata, when a text was tokenized
  ChunkOptionNames names;                  ///< how the options are named in messages
  /// The cache the forward runs under (model/kv_hook.h; not owned), null: exact. q, k and v are then
  /// what each layer computes when the layers before it read that cache; the logits are the run's.
  const KvCacheQuantization* cache = nullptr;
  std::map<std::string, std::string> metadata;  ///< added to the file's metadata (what `cache` is)
  std::function<void(int done, int total)> on_chunk;
};

struct KvDumpSummary {
  int chunks = 0;
  int ctx = 0;
  std::vector<int> layers;
  std::uint64_t bytes = 0;  ///< of tensor data
};

/// Runs the chunks and writes `path` (.safetensors). InputError for a layer the
/// model lacks, too few tokens, or an output that cannot be written.
KvDumpSummary write_model_kv_dump(const Transformer& model, const std::vector<std::int32_t>& tokens,
                                  const std::string& path, const KvDumpWriteOptions& options);

/// Token-major rows (tokens x heads * dim, as forward() hands q/k/v out) to
/// head-major (heads x tokens x dim). out: tokens * heads * dim floats.
void to_head_major(int tokens, int heads, int dim, const float* in, float* out);

}  // namespace tqlab
