// The end-to-end part of a sweep with a "model" block (docs/SWEEP.md#model): a
// Hugging Face checkpoint run over fixed tokens with an exact KV cache once (the
// base) and with each run's fake-quantized cache once per seed, every layer's
// post-RoPE K and V going through the run's specs with the very
// fake_quantize_rows and contexts {seed, role, layer, kv head} of the offline
// path (model/kv_hook.h). Per (run, seed) the per-token comparison with the base
// is kept (model/end_to_end.h); the e2e_* metrics come from it
// (metrics/next_token_metrics.h).
//
// Without "data" the offline metrics are measured on the Q/K/V the model itself
// produces for the same tokens: the dump `tqlab dump --dtype f32` would write, made
// in the temporary folder ($TMPDIR, else /tmp), opened, and unlinked at once (the
// map keeps it readable; nothing is left behind, even after a kill).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/weight_source.h"
#include "model/e2e_summary.h"
#include "model/end_to_end.h"
#include "model/kv_cache_plan.h"
#include "model/model_tokens.h"
#include "model/transformer.h"
#include "sweep/sweep_config.h"

namespace tqlab {

class TensorFile;

struct SweepModel {
  std::unique_ptr<WeightSource> source;
  std::unique_ptr<Transformer> transformer;
  ModelIdentity identity;
  ModelTokens tokens;
  EndToEndOptions options;
  int chunks = 0;                     ///< chunks each pass runs
  std::vector<KvCachePlan> runs;      ///< per config run: its quantizers for the model (seed set per pass)
};

/// Opens the checkpoint, reads or tokenizes the tokens and resolves every run's
/// specs for the model, before any compute: InputError naming the config key
/// ("model.tokens", "runs[2].k") on anything wrong.
std::unique_ptr<SweepModel> open_sweep_model(const SweepConfig& config);

/// The model's own Q/K/V over the tokens as a KV dump (f32, every layer, one
/// sequence per chunk), opened from an unlinked temporary file; `identity_bytes`
/// and `identity_sha256` get the dump's size and sha256.
std::unique_ptr<TensorFile> model_kv_dump(const SweepModel& model, int threads, std::uint64_t& identity_bytes,
                                          std::string& identity_sha256);

/// What the end-to-end passes measured: the base, and per (run, seed) its series
/// and packed bytes (runs outer, seeds inner), every chunk in order.
struct SweepEndToEnd {
  BaseResult base;
  std::int64_t scored_tokens = 0;
  std::vector<RunSeedResult> run_seeds;
};

/// The end-to-end part of a sweep's totals, chunk by chunk: what its work units
/// (sweep/work_units.h) hold, in any order, from any process.
struct EndToEndTotals {
  int chunks = 0;
  int scored_per_chunk = 0;
  std::vector<std::optional<std::vector<double>>> base_nll;  ///< [chunk]: the base's nll per scored token
  std::vector<std::optional<RunSeedResult>> runs;            ///< [run_seed * chunks + chunk]
};

EndToEndTotals empty_end_to_end_totals(const SweepModel& model, int run_seeds);

/// Every part in chunk order: the base's nll and perplexity, each (run, seed)'s
/// series and its bytes summed over chunks. InternalError when a part is missing.
SweepEndToEnd assemble_end_to_end(const EndToEndTotals& totals);

/// Chunk `chunk` of the model's tokens as a session of its own: its base pass
/// runs at once, then run() measures one (run, seed) on it. Each chunk is a
/// prefill of its own, so the floats are those of the chunk in a session over
/// every chunk, and chunks can be measured anywhere, in any order.
std::unique_ptr<EndToEndSession> chunk_session(const SweepModel& model, int chunk, int threads);

}  // namespace tqlab
