#include "metrics/needle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/rng.h"
#include "metrics/attention_compare.h"
#include "quant/quantizer.h"

namespace tqlab {
namespace {

// Seed streams of the needle tests: fixed, so every run and seed of a sweep
// sees the same trials.
constexpr std::uint64_t kPlantedNeedleStream = 0x6e6565646c65ull;    // "needle"
constexpr std::uint64_t kSyntheticNeedleStream = 0x73796e746800ull;  // "synth"
constexpr int kPickAttempts = 64;

// Uniform in [0, n), without the modulo bias.
int uniform_index(Rng& rng, int n) {
  const std::uint64_t range = static_cast<std::uint64_t>(n);
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  std::uint64_t draw = rng.next_u64();
  while (draw >= limit) draw = rng.next_u64();
  return static_cast<int>(draw % range);
}

// Chunk-local range [first, last] of keys j < t eligible as a needle for token t; first > last when none.
std::pair<int, int> eligible_keys(int t, int tokens, const AttentionConfig& attention, int window, int sink) {
  const int start = t / attention.chunk * attention.chunk;
  const int length = std::min(attention.chunk, tokens - start);
  const int i = t - start;
  int last = i - 1;
  if (window > 0) last = std::min(last, attention.window_mode == WindowMode::recent ? i - window : length - window - 1);
  return {std::max(0, sink - start), last};
}

double dot(int n, const float* a, const float* b) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

std::vector<float> unit_gaussian(Rng& rng, int dim) {
  std::vector<double> draw(static_cast<std::size_t>(dim));
  double norm = 0;
  for (double& value : draw) {
    value = rng.gaussian();
    norm += value * value;
  }
  norm = std::sqrt(norm);
  std::vector<float> out(static_cast<std::size_t>(dim));
  for (int i = 0; i < dim; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<float>(draw[static_cast<std::size_t>(i)] / norm);
  return out;
}

std::vector<double> softmax(const std::vector<double>& logits) {
  std::vector<double> p(logits.size());
  (void)exact_softmax(static_cast<int>(logits.size()), logits.data(), p.data());
  return p;
}

}  // namespace

std::vector<NeedleTrial> plan_needle_trials(const KvDump& dump, int count, const AttentionConfig& attention,
                                            int largest_window, int largest_sink) {
  std::vector<NeedleTrial> trials;
  if (!dump.has_queries() || count <= 0) return trials;
  const auto& layers = dump.layers();
  // The eligible query positions of a layer depend only on its token count.
  std::vector<std::vector<int>> eligible(layers.size());
  bool any = false;
  for (std::size_t li = 0; li < layers.size(); ++li) {
    for (int t = 0; t < layers[li].tokens; ++t) {
      const auto [first, last] = eligible_keys(t, layers[li].tokens, attention, largest_window, largest_sink);
      if (first <= last) eligible[li].push_back(t);
    }
    any = any || !eligible[li].empty();
  }
  if (!any) return trials;
  Rng rng(derive_seed({kPlantedNeedleStream}));
  for (int trial = 0; trial < count; ++trial) {
    for (int attempt = 0; attempt < kPickAttempts; ++attempt) {
      NeedleTrial pick;
      pick.layer_index = uniform_index(rng, static_cast<int>(layers.size()));
      const KvLayerShape& shape = layers[static_cast<std::size_t>(pick.layer_index)];
      pick.seq = uniform_index(rng, shape.seqs);
      pick.q_head = uniform_index(rng, shape.q_heads);
      const std::vector<int>& positions = eligible[static_cast<std::size_t>(pick.layer_index)];
      if (positions.empty()) continue;
      pick.query = positions[static_cast<std::size_t>(uniform_index(rng, static_cast<int>(positions.size())))];
      const auto [first, last] = eligible_keys(pick.query, shape.tokens, attention, largest_window, largest_sink);
      const int start = pick.query / attention.chunk * attention.chunk;
      pick.key = start + first + uniform_index(rng, last - first + 1);
      trials.push_back(pick);
      break;
    }
  }
  return trials;
}

std::vector<double> needle_logits(int dim, int attended, const ChunkGeometry& chunk, const float* q, const float* keys,
                                  double scale) {
  std::vector<double> logits(static_cast<std::size_t>(attended));
  for (int i = 0; i < attended; ++i) {
    logits[static_cast<std::size_t>(i)] = scale * dot(dim, q, keys + static_cast<std::size_t>(chunk.start + i) * dim);
  }
  return logits;
}

PlantedNeedle plant_needle(int dim, const std::vector<double>& logits, int j_local, const float* q, const float* k_j,
                           double scale, double margin) {
  double best_other = -INFINITY;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (static_cast<int>(i) != j_local) best_other = std::max(best_other, logits[i]);
  }
  const double q_norm = std::sqrt(dot(dim, q, q));
  PlantedNeedle planted;
  if (!(q_norm > 0)) return planted;  // no direction to move the key along
  planted.key.resize(static_cast<std::size_t>(dim));
  // delta moves j's logit by scale * delta * |q| to best_other + margin.
  const double delta = (best_other + margin - logits[static_cast<std::size_t>(j_local)]) / (scale * q_norm);
  for (int c = 0; c < dim; ++c) {
    const double value = k_j[c] + delta * q[c] / q_norm;
    if (!(std::fabs(value) <= std::numeric_limits<float>::max())) {
      planted.key.clear();  // beyond float (a query of denormal norm asks for a huge step)
      return planted;
    }
    planted.key[static_cast<std::size_t>(c)] = static_cast<float>(value);
  }
  // The weight the planted key really gets, from the float key as stored.
  const double planted_logit = scale * dot(dim, q, planted.key.data());
  double others = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (static_cast<int>(i) != j_local) others += std::exp(logits[i] - planted_logit);
  }
  planted.exact_weight = 1.0 / (1.0 + others);
  return planted;
}

bool needles_are_plantable(std::span<const PlantedNeedle> planted, int dim, int attended, const ChunkGeometry& chunk,
                           const float* keys) {
  double longest = 0;
  for (int i = 0; i < attended; ++i) {
    const float* key = keys + static_cast<std::size_t>(chunk.start + i) * dim;
    longest = std::max(longest, dot(dim, key, key));
  }
  const double bound = kMaxPlantedKeyNormRatio * kMaxPlantedKeyNormRatio * longest;
  return std::all_of(planted.begin(), planted.end(), [&](const PlantedNeedle& needle) {
    return !needle.key.empty() && dot(dim, needle.key.data(), needle.key.data()) <= bound;
  });
}

NeedleOutcome measure_needle(const std::vector<double>& exact_logits, const std::vector<double>& quantized_logits,
                             int j_local, double planted_logit, double exact_weight, const ExactTokens& exact,
                             const ChunkGeometry& chunk, int query_local) {
  std::vector<double> logits = quantized_logits;
  const auto keys = static_cast<int>(logits.size());
  for (const auto& [from, to] : exact.ranges(chunk, query_local, keys)) {
    for (int i = from; i < to; ++i) {
      logits[static_cast<std::size_t>(i)] = i == j_local ? planted_logit : exact_logits[static_cast<std::size_t>(i)];
    }
  }
  NeedleOutcome outcome;
  const double needle = logits[static_cast<std::size_t>(j_local)];
  double others = 0;
  int argmax = 0;
  for (int i = 0; i < keys; ++i) {
    if (logits[static_cast<std::size_t>(i)] > logits[static_cast<std::size_t>(argmax)]) argmax = i;
    if (i != j_local) others += std::exp(logits[static_cast<std::size_t>(i)] - needle);
  }
  outcome.top1 = argmax == j_local;
  outcome.weight_ratio = 1.0 / (1.0 + others) / exact_weight;
  return outcome;
}

SyntheticNeedle make_synthetic_needle(int trial, int dim, int keys) {
  Rng rng(derive_seed({kSyntheticNeedleStream, static_cast<std::uint64_t>(trial)}));
  SyntheticNeedle needle;
  needle.dim = dim;
  needle.keys = keys;
  needle.query = unit_gaussian(rng, dim);
  needle.needle = uniform_index(rng, keys);
  needle.key_rows.resize(static_cast<std::size_t>(keys) * dim);
  for (int row = 0; row < keys; ++row) {
    std::vector<float> key = unit_gaussian(rng, dim);
    if (row == needle.needle) {
      // cos(q, k) = 0.5: k = 0.5 q + sqrt(0.75) u, u a unit vector orthogonal to q.
      const double along = dot(dim, key.data(), needle.query.data());
      std::vector<double> orthogonal(static_cast<std::size_t>(dim));
      double norm = 0;
      for (int c = 0; c < dim; ++c) {
        orthogonal[static_cast<std::size_t>(c)] =
            key[static_cast<std::size_t>(c)] - along * needle.query[static_cast<std::size_t>(c)];
        norm += orthogonal[static_cast<std::size_t>(c)] * orthogonal[static_cast<std::size_t>(c)];
      }
      norm = std::sqrt(norm);
      for (int c = 0; c < dim; ++c) {
        key[static_cast<std::size_t>(c)] =
            static_cast<float>(kSyntheticNeedleCosine * needle.query[static_cast<std::size_t>(c)] +
                               std::sqrt(1 - kSyntheticNeedleCosine * kSyntheticNeedleCosine) *
                                   orthogonal[static_cast<std::size_t>(c)] / norm);
      }
    }
    std::copy(key.begin(), key.end(), needle.key_rows.begin() + static_cast<std::ptrdiff_t>(row) * dim);
  }
  needle.values.resize(static_cast<std::size_t>(keys) * dim);
  for (float& value : needle.values) value = static_cast<float>(rng.gaussian());

  const double scale = 2.0 * std::sqrt(static_cast<double>(dim));
  std::vector<double> logits(static_cast<std::size_t>(keys));
  for (int row = 0; row < keys; ++row) {
    logits[static_cast<std::size_t>(row)] =
        scale * dot(dim, needle.query.data(), needle.key_rows.data() + static_cast<std::size_t>(row) * dim);
  }
  needle.exact_p = softmax(logits);
  needle.exact_out.assign(static_cast<std::size_t>(dim), 0.0);
  for (int row = 0; row < keys; ++row) {
    for (int c = 0; c < dim; ++c) {
      needle.exact_out[static_cast<std::size_t>(c)] +=
          needle.exact_p[static_cast<std::size_t>(row)] * needle.values[static_cast<std::size_t>(row) * dim + c];
    }
  }
  return needle;
}

std::pair<double, double> measure_synthetic_needle(const SyntheticNeedle& needle, const Quantizer& quantizer,
                                                   std::uint64_t seed, int trial) {
  const QuantContext context{seed, Role::key, -1, trial};
  const EncodedTensor encoded = quantizer.encode(needle.keys, needle.dim, needle.key_rows.data(), context);
  std::vector<float> decoded(needle.key_rows.size());
  quantizer.decode(encoded, context, decoded.data());
  const double scale = 2.0 * std::sqrt(static_cast<double>(needle.dim));
  std::vector<double> logits(static_cast<std::size_t>(needle.keys));
  for (int row = 0; row < needle.keys; ++row) {
    logits[static_cast<std::size_t>(row)] =
        scale * dot(needle.dim, needle.query.data(), decoded.data() + static_cast<std::size_t>(row) * needle.dim);
  }
  const std::vector<double> p = softmax(logits);
  double error = 0, reference = 0;
  for (int c = 0; c < needle.dim; ++c) {
    double out = 0;
    for (int row = 0; row < needle.keys; ++row)
      out += p[static_cast<std::size_t>(row)] * needle.values[static_cast<std::size_t>(row) * needle.dim + c];
    const double exact = needle.exact_out[static_cast<std::size_t>(c)];
    error += (out - exact) * (out - exact);
    reference += exact * exact;
  }
  return {p[static_cast<std::size_t>(needle.needle)], std::sqrt(error / reference)};
}

}  // namespace tqlab
