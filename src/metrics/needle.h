// The needle tests (docs/SWEEP.md#metrics, needle).
//
// Planted needle, on the dump's real keys: a trial picks a (layer, sequence,
// q head, query t) and a key position j < t in t's chunk, outside every run's
// window and sinks (the largest window and sink of the sweep, so that every
// run is measured on the same trials), then for each margin moves k_j along
// the query, k_j <- k_j + delta q/|q|, with delta such that j's exact logit
// beats the best other key's by `margin` nats; the whole key slab is
// quantized again with k_j planted, and the trial reports whether j is still
// the arg-max (needle_top1) and P~_j / P_j (needle_weight_ratio). Picks:
// layer, sequence and q head uniform; t uniform over the positions that have
// such a j; j uniform among them. The picks depend only on the data's shape,
// the chunking and the largest window and sink, never on a run or seed.
//
// Synthetic needle (the numpy reproduction, docs/SOURCES.md), at head dim 128: a unit query q, 4096 unit
// keys of which one (the needle, at a random position) has cosine 0.5 to q
// and the rest are uniform on the sphere, values N(0, I), logits
// 2 sqrt(d) q.k; only the keys are quantized, in context {seed, key, layer
// -1, head = trial}. Reports the needle's weight under P~
// (needle_synth_weight; exact about 0.74) and |P~ V - P V| / |P V|
// (needle_synth_out_err).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_dump.h"
#include "metrics/attention_geometry.h"

namespace tqlab {

struct NeedleConfig {
  int trials = 256;                               ///< planted-needle trials on the dump's keys
  std::vector<double> margins{0.5, 1.0, 2.0, 4.0};  ///< logit margins (nats) of the planted key
  int synth_trials = 40;                          ///< trials of the numpy reproduction's synthetic test (0: off)
};

class Quantizer;

/// One planted-needle trial.
struct NeedleTrial {
  int layer_index = 0;
  int seq = 0;
  int q_head = 0;
  int query = 0;  ///< t, a token of the sequence
  int key = 0;    ///< j < t, in t's chunk
};

/// `count` trials over the dump's layers (requires queries). Empty when no
/// position has an eligible key.
std::vector<NeedleTrial> plan_needle_trials(const KvDump& dump, int count, const AttentionConfig& attention,
                                            int largest_window, int largest_sink);

/// The exact side of one trial at one margin: the planted key and its weight.
struct PlantedNeedle {
  /// k_j + delta q/|q|, key_dim floats; empty when it cannot be planted: q is zero, or
  /// of so small a norm (denormals) that the key would overflow float.
  std::vector<float> key;
  double exact_weight = 0;       ///< P_j with the planted key
};

/// A trial is measured only when the key it plants at every margin is at
/// most this many times longer than the longest key its query attends. delta
/// grows as 1/|q|: a query of (nearly) zero norm would need a key millions of
/// times longer than the data's, which measures a quantizer's range rather
/// than its precision (and overflows every format with fp16 norms).
constexpr double kMaxPlantedKeyNormRatio = 16;

/// Whether every needle of `planted` (one per margin) was planted (plant_needle
/// leaves the key empty when it cannot be) and keeps within
/// kMaxPlantedKeyNormRatio of the longest of the `attended` keys of `chunk`
/// (keys: the sequence's, tokens x dim).
bool needles_are_plantable(std::span<const PlantedNeedle> planted, int dim, int attended, const ChunkGeometry& chunk,
                           const float* keys);

/// The exact logits of query q over the keys of its chunk it attends
/// (chunk.start .. chunk.start + attended - 1), in double, scale included.
/// keys: the sequence's keys (tokens x dim).
std::vector<double> needle_logits(int dim, int attended, const ChunkGeometry& chunk, const float* q, const float* keys,
                                  double scale);

/// Plants the needle for `margin`: logits are the exact ones (needle_logits),
/// j_local the needle's chunk-local position, k_j its original key.
PlantedNeedle plant_needle(int dim, const std::vector<double>& logits, int j_local, const float* q, const float* k_j,
                           double scale, double margin);

/// One trial's result for one run.
struct NeedleOutcome {
  bool top1 = false;         ///< j is the arg-max of P~ (ties: the lower index wins)
  double weight_ratio = 0;   ///< P~_j / P_j
};

/// P~ over the attended keys: quantized logits except on the run's exact tokens,
/// where the exact ones (with the planted key at j) are used.
NeedleOutcome measure_needle(const std::vector<double>& exact_logits, const std::vector<double>& quantized_logits,
                             int j_local, double planted_logit, double exact_weight, const ExactTokens& exact,
                             const ChunkGeometry& chunk, int query_local);

/// One synthetic trial's data (the numpy reproduction, docs/SOURCES.md).
struct SyntheticNeedle {
  int dim = 0, keys = 0;
  int needle = 0;                ///< index of the needle key
  std::vector<float> query;      ///< dim
  std::vector<float> key_rows;   ///< keys x dim, unit rows
  std::vector<float> values;     ///< keys x dim
  std::vector<double> exact_p;   ///< softmax of the exact logits
  std::vector<double> exact_out; ///< P V, dim
};

inline constexpr int kSyntheticNeedleKeys = 4096;
inline constexpr double kSyntheticNeedleCosine = 0.5;

/// Generates trial `trial` (deterministic: its own seed stream).
SyntheticNeedle make_synthetic_needle(int trial, int dim = 128, int keys = kSyntheticNeedleKeys);

/// Quantizes the keys with `quantizer` (context {seed, key, -1, trial}) and
/// returns (needle weight under P~, |P~ V - P V| / |P V|).
std::pair<double, double> measure_synthetic_needle(const SyntheticNeedle& needle, const Quantizer& quantizer,
                                                   std::uint64_t seed, int trial);

}  // namespace tqlab
