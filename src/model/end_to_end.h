// The end-to-end measurement: a model over fixed tokens, once with an exact
// KV cache (the base) and then once per run configuration with a
// fake-quantized one (model/kv_hook.h), each run's next-token predictions
// compared with the base's (metrics/next_token_metrics.h).
//
// Tokens are cut into `chunks` consecutive chunks of `ctx` tokens, each a
// teacher-forced prefill of its own (position 0 at its first token; with
// `bos` that token is replaced by the config's bos_token_id, as llama.cpp's
// perplexity does). Scored predictions, per chunk, as llama.cpp scores them:
//   second-half: positions ctx/2 .. ctx-2 predict tokens ctx/2+1 .. ctx-1
//                (the first half is context only);
//   all:         positions 0 .. ctx-2 predict tokens 1 .. ctx-1.
//
// The base runs once, when the session is made: it keeps, per chunk, the
// final hidden states of the scored positions (scored x hidden floats, far
// smaller than their logits). A run recomputes the base's logits from them
// block by block beside its own, so neither a full [ctx x vocab] logit matrix
// nor a logits file exists: per block of logit_rows() scored tokens, two
// logit_rows() x vocab float blocks. The recomputed base logits are the same
// floats the base pass had (the same sgemm on the same blocks), so every run
// compares against one base. A run costs one forward of every chunk plus the
// base's output layer on the scored positions.
//
// A run whose cache is exact in the layers before some layer L (the allocation
// profile quantizes one layer's K or V at a time) need not compute them again:
// with keep_layer_inputs the base also keeps, per chunk, the residual stream
// entering every layer from 1 on (chunks x (layers - 1) x ctx x hidden floats),
// and run(cache, L) starts each chunk at layer L from it. The floats are those
// of a run from layer 0 (an exact cache reproduces the base's layers exactly),
// at the cost of layers L.. only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "metrics/next_token_metrics.h"
#include "model/chunking.h"
#include "model/kv_hook.h"
#include "model/scoring.h"
#include "model/transformer.h"

namespace tqlab {

/// The first position a chunk of `ctx` tokens scores (its prediction of the next token).
int first_scored_position(int ctx, Scoring scoring);
/// How many predictions a chunk scores: positions first_scored_position .. ctx - 2.
int scored_per_chunk(int ctx, Scoring scoring);

struct EndToEndOptions {
  int ctx = 512;
  int chunks = 0;  ///< 0: every whole chunk the tokens hold
  Scoring scoring = Scoring::second_half;
  bool bos = false;
  int threads = 0;
  int first_chunk = 0;  ///< the number messages give the first chunk (a session over one chunk of many)
  bool keep_layer_inputs = false;  ///< keep each layer's input of the base, for run(cache, first_layer)
  ChunkOptionNames names;  ///< how the options are named in messages
  /// After each chunk of the base and of every run: (chunks done, chunks in this pass, tokens of a chunk).
  std::function<void(int done, int total, int ctx)> on_chunk;
};

/// What the base pass measured.
struct BaseResult {
  std::vector<double> nll;  ///< per scored token, in order
  ValueAndError perplexity;
};

/// One run-seed: the per-token comparison with the base and the cache's packed bytes.
struct RunSeedResult {
  NextTokenSeries series;
  KvCacheBytes bytes;
};

class EndToEndSession {
 public:
  /// Checks the token count against ctx and chunks (InputError naming
  /// `tokens_name`), and runs the base pass.
  EndToEndSession(const Transformer& model, std::vector<std::int32_t> tokens, const EndToEndOptions& options,
                  std::string tokens_name);

  const Transformer& model() const { return *model_; }
  int ctx() const { return options_.ctx; }
  int chunks() const { return chunks_; }
  /// Scored predictions per chunk, and in all.
  int scored_per_chunk() const { return tqlab::scored_per_chunk(options_.ctx, options_.scoring); }
  std::int64_t scored_tokens() const { return static_cast<std::int64_t>(chunks_) * scored_per_chunk(); }
  /// Scored tokens per block of logits.
  int logit_rows() const { return logit_rows_; }
  const BaseResult& base() const { return base_; }
  /// The tokens of chunk c as the model reads them (BOS in place with --bos).
  std::vector<std::int32_t> chunk_tokens(int chunk) const;

  /// Runs every chunk with `cache` (its seed included) and compares with the base.
  /// InputError (naming the chunk, layer and head) when a quantizer refuses the
  /// cache's values, or when logits come out NaN/Inf. first_layer > 0 starts each
  /// chunk there from the base's kept layer inputs (keep_layer_inputs); every
  /// quantizer of the layers before it must be fp32 (InternalError otherwise). The
  /// bytes then count layers first_layer.. only.
  RunSeedResult run(const KvCacheQuantization& cache, int first_layer = 0);

 private:
  // Compares the scored positions of chunk `chunk`: hidden (scored x hidden) against the base's.
  void compare_chunk(int chunk, const float* hidden, NextTokenSeries& series);

  const Transformer* model_;
  std::vector<std::int32_t> tokens_;
  EndToEndOptions options_;
  std::string tokens_name_;
  int chunks_ = 0;
  int first_scored_ = 0;
  int logit_rows_ = 0;
  Workers workers_;
  ForwardWorkspace workspace_;
  std::vector<std::vector<float>> base_hidden_;  ///< [chunk]: scored x hidden
  std::vector<std::vector<float>> layer_inputs_;  ///< [chunk * layers + layer], layer >= 1: ctx x hidden
  std::vector<float> base_logits_, run_logits_;   ///< logit_rows x vocab
  BaseResult base_;
};

}  // namespace tqlab
