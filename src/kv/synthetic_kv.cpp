#include "kv/synthetic_kv.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"
#include "io/tensor_file.h"

namespace tqlab {
namespace {

// Draw streams of derive_seed, so that changing one part of the generator
// leaves the others' numbers alone.
enum Stream : std::uint64_t { kLayerShape = 1, kKeys = 2, kValues = 3, kQueries = 4 };

constexpr double kRopeBase = 10000.0;

void validate(const SyntheticKvOptions& options) {
  auto require = [](bool ok, const char* option, int value, const char* expected) {
    if (!ok) fail("synth: --{} {} is not allowed, expected {}", option, value, expected);
  };
  require(options.layers >= 1 && options.layers <= 4096, "layers", options.layers, "1..4096");
  require(options.kv_heads >= 1 && options.kv_heads <= 4096, "kv-heads", options.kv_heads, "1..4096");
  require(options.q_heads >= 1 && options.q_heads % options.kv_heads == 0, "q-heads", options.q_heads,
          "a positive multiple of --kv-heads");
  require(options.tokens >= 1, "tokens", options.tokens, "at least 1");
  require(options.seqs >= 1, "seqs", options.seqs, "at least 1");
  require(options.dim >= 2 && options.dim % 2 == 0 && options.dim <= 4096, "dim", options.dim,
          "an even number in 2..4096 (RoPE pairs)");
  const double elements = static_cast<double>(options.layers) * options.seqs * options.tokens * options.dim *
                          (2.0 * options.kv_heads + options.q_heads);
  if (elements > 2e9) {
    fail("synth: {} layers x {} seqs x {} tokens x {} dims x {} heads is {:.3g} values; keep it under 2e9",
         options.layers, options.seqs, options.tokens, options.dim, 2 * options.kv_heads + options.q_heads,
         elements);
  }
}

// Rotates each RoPE pair (2p, 2p+1) of x by position * theta_p.
void apply_rope(int dim, int position, float* x) {
  for (int pair = 0; pair < dim / 2; ++pair) {
    const double theta = std::pow(kRopeBase, -2.0 * pair / dim);
    const double angle = position * theta;
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = x[2 * pair], b = x[2 * pair + 1];
    x[2 * pair] = static_cast<float>(a * c - b * s);
    x[2 * pair + 1] = static_cast<float>(a * s + b * c);
  }
}

// Per-head key statistics before RoPE: offset and spread per channel.
struct KeyProfile {
  std::vector<double> offset;
  std::vector<double> spread;
};

KeyProfile make_key_profile(int dim, Rng& rng) {
  KeyProfile profile{std::vector<double>(dim, 0.0), std::vector<double>(dim, 1.0)};
  for (int c = 0; c < dim; ++c) profile.spread[c] = 0.6 + 0.8 * rng.uniform();
  // Outlier pairs sit in the low-frequency half (slowly rotating pairs keep their offset).
  const int pairs = dim / 2;
  const int outlier_pairs = std::max(1, dim / 32);
  std::vector<int> candidates(static_cast<std::size_t>(pairs - pairs / 2));
  std::iota(candidates.begin(), candidates.end(), pairs / 2);
  for (int chosen = 0; chosen < outlier_pairs && !candidates.empty(); ++chosen) {
    const auto pick = static_cast<std::size_t>(rng.uniform() * static_cast<double>(candidates.size()));
    const int pair = candidates[std::min(pick, candidates.size() - 1)];
    candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(std::min(pick, candidates.size() - 1)));
    const double magnitude = 8.0 + 7.0 * rng.uniform();
    const double phase = 2.0 * M_PI * rng.uniform();
    profile.offset[2 * pair] = magnitude * std::cos(phase);
    profile.offset[2 * pair + 1] = magnitude * std::sin(phase);
    profile.spread[2 * pair] = profile.spread[2 * pair + 1] = 2.0 + 2.0 * rng.uniform();
  }
  return profile;
}

// The key position query `t` mostly attends to: sink, recent, or anywhere before.
int attention_target(int t, Rng& rng) {
  if (t == 0) return 0;
  const double draw = rng.uniform();
  if (draw < 0.15) return 0;
  if (draw < 0.6) return std::max(0, t - 1 - static_cast<int>(rng.uniform() * 8.0));
  return std::min(t, static_cast<int>(rng.uniform() * (t + 1)));
}

// The scale s of query direction v that gives the target key about `weight`
// of the causal softmax over keys 0..t at logits s <v, k_i> / sqrt(d). The
// other keys' mass is estimated from up to 64 of them drawn at random, so the
// cost does not grow with t; the weight falls monotonically in s when the
// target's logit leads, and a bisection on log s finds it. Without this the
// target competes with the sum over all t earlier keys and attention flattens
// as the context grows (docs/SYNTH.md).
double query_scale_for_weight(int d, int t, int target, const std::vector<double>& v, const float* keys, double weight,
                              Rng& rng) {
  const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(d));
  auto logit = [&](int i) {
    double dot = 0.0;
    for (int c = 0; c < d; ++c) dot += v[c] * keys[static_cast<std::size_t>(i) * d + c];
    return dot * inv_sqrt_d;
  };
  const double target_logit = logit(target);
  std::vector<double> others;  // other keys' logits minus the target's, at s = 1
  constexpr int kSample = 64;
  if (t <= kSample) {
    for (int i = 0; i <= t; ++i) {
      if (i != target) others.push_back(logit(i) - target_logit);
    }
  } else {
    for (int drawn = 0; drawn < kSample; ++drawn) {
      int i = static_cast<int>(rng.uniform() * (t + 1));
      if (i > t) i = t;
      if (i == target) i = (i + 1) % (t + 1);
      others.push_back(logit(i) - target_logit);
    }
  }
  if (others.empty()) return 1.0 / std::sqrt(static_cast<double>(d));  // t == 0: one key takes all the weight
  const double multiplicity = static_cast<double>(t) / static_cast<double>(others.size());
  auto target_weight = [&](double s) {
    double mass = 0.0;
    for (double delta : others) mass += std::exp(std::min(s * delta, 700.0));
    return 1.0 / (1.0 + multiplicity * mass);
  };
  // Queries stay within +-64 per channel (far inside fp16 and bf16 range).
  double largest = 1e-12;
  for (double component : v) largest = std::max(largest, std::fabs(component));
  double lo = std::log(1e-6 / largest), hi = std::log(64.0 / largest);  // log s
  if (target_weight(std::exp(hi)) < weight) {
    // Another key outscores the target (likely at small d, where directions
    // are crude): aim for a logit 4 above the average key's, as a typical head.
    double mean_delta = 0.0;
    for (double delta : others) mean_delta += delta / static_cast<double>(others.size());
    return mean_delta < 0 ? std::min(std::exp(hi), 4.0 / -mean_delta) : std::exp(lo);
  }
  for (int iteration = 0; iteration < 50; ++iteration) {
    const double mid = 0.5 * (lo + hi);
    if (target_weight(std::exp(mid)) < weight) lo = mid; else hi = mid;
  }
  return std::exp(0.5 * (lo + hi));
}

// The shape of a tensor of `heads` heads: [seqs,] heads, tokens, dim (the seq axis only when seqs > 1).
std::vector<std::int64_t> tensor_shape(const SyntheticKvOptions& options, int heads) {
  std::vector<std::int64_t> shape{heads, options.tokens, options.dim};
  if (options.seqs > 1) shape.insert(shape.begin(), options.seqs);
  return shape;
}

// The seed of one draw stream of (layer, kv head, seq); `extra` tells streams of one kind apart (the q head).
std::uint64_t stream_seed(const SyntheticKvOptions& options, Stream stream, int layer, int head, int seq, int extra) {
  return derive_seed({options.seed, stream, static_cast<std::uint64_t>(layer), static_cast<std::uint64_t>(head),
                      static_cast<std::uint64_t>(seq), static_cast<std::uint64_t>(extra)});
}

// The values' per-channel sigma for a head of key profile `profile`: the expected key norm over sqrt(d),
// divided by the layer's key norm / value norm ratio.
double value_sigma_for(const KeyProfile& profile, int d, double norm_ratio) {
  double expected_key_norm2 = 0.0;
  for (int c = 0; c < d; ++c)
    expected_key_norm2 += profile.offset[c] * profile.offset[c] + profile.spread[c] * profile.spread[c];
  return std::sqrt(expected_key_norm2 / d) / norm_ratio;
}

// Fills one head's keys (post-RoPE, drawn from `profile`) and values (N(0, value_sigma^2)), each
// [tokens, d] floats.
void fill_keys_and_values(int d, int tokens, const KeyProfile& profile, double value_sigma, Rng& key_rng,
                          Rng& value_rng, float* keys, float* values) {
  for (int t = 0; t < tokens; ++t) {
    float* key = keys + static_cast<std::size_t>(t) * d;
    for (int c = 0; c < d; ++c) key[c] = static_cast<float>(profile.offset[c] + profile.spread[c] * key_rng.gaussian());
    apply_rope(d, t, key);
    float* value = values + static_cast<std::size_t>(t) * d;
    for (int c = 0; c < d; ++c) value[c] = static_cast<float>(value_sigma * value_rng.gaussian());
  }
}

// The mean of `tokens` keys of [tokens, d] floats, d channels.
std::vector<double> mean_key_of(int d, int tokens, const float* keys) {
  std::vector<double> mean_key(d, 0.0);
  for (int t = 0; t < tokens; ++t) {
    for (int c = 0; c < d; ++c) mean_key[c] += keys[static_cast<std::size_t>(t) * d + c];
  }
  for (double& m : mean_key) m /= tokens;
  return mean_key;
}

// Fills one q head's queries, [tokens, d] floats: query t points at its target key (less the mean key,
// plus noise), scaled to give it 30-90% of the causal softmax over `keys`.
void fill_queries(int d, int tokens, const float* keys, const std::vector<double>& mean_key, Rng& query_rng,
                  float* queries) {
  std::vector<double> direction(d);
  for (int t = 0; t < tokens; ++t) {
    const int target = attention_target(t, query_rng);
    const float* key = keys + static_cast<std::size_t>(target) * d;
    double norm2 = 0.0;
    for (int c = 0; c < d; ++c) {
      direction[c] = key[c] - mean_key[c];
      norm2 += direction[c] * direction[c];
    }
    const double noise = 0.5 * std::sqrt(std::max(norm2, 1e-12) / d);
    for (int c = 0; c < d; ++c) direction[c] += noise * query_rng.gaussian();
    const double weight = 0.3 + 0.6 * query_rng.uniform();
    const double scale = query_scale_for_weight(d, t, target, direction, keys, weight, query_rng);
    float* query = queries + static_cast<std::size_t>(t) * d;
    for (int c = 0; c < d; ++c) query[c] = static_cast<float>(scale * direction[c]);
  }
}

// Fills kv head `head` of one layer in every sequence: its keys and values in k and v, and the queries of
// its group of q heads in q.
void fill_kv_head(const SyntheticKvOptions& options, int layer, int head, double norm_ratio, SyntheticTensor& q,
                  SyntheticTensor& k, SyntheticTensor& v) {
  const int d = options.dim, tokens = options.tokens;
  const std::size_t head_size = static_cast<std::size_t>(tokens) * d;
  const int group = options.q_heads / options.kv_heads;
  // The head's key profile is shared by its sequences (a property of the weights).
  Rng profile_rng(
      derive_seed({options.seed, kKeys, static_cast<std::uint64_t>(layer), static_cast<std::uint64_t>(head)}));
  const KeyProfile profile = make_key_profile(d, profile_rng);
  const double value_sigma = value_sigma_for(profile, d, norm_ratio);

  for (int seq = 0; seq < options.seqs; ++seq) {
    const auto slab = [&](int heads, int h) { return (static_cast<std::size_t>(seq) * heads + h) * head_size; };
    float* keys = k.values.data() + slab(options.kv_heads, head);
    float* values = v.values.data() + slab(options.kv_heads, head);
    Rng key_rng(stream_seed(options, kKeys, layer, head, seq, 0));
    Rng value_rng(stream_seed(options, kValues, layer, head, seq, 0));
    fill_keys_and_values(d, tokens, profile, value_sigma, key_rng, value_rng, keys, values);
    const std::vector<double> mean_key = mean_key_of(d, tokens, keys);

    for (int member = 0; member < group; ++member) {
      const int q_head = head * group + member;
      Rng query_rng(stream_seed(options, kQueries, layer, head, seq, q_head));
      fill_queries(d, tokens, keys, mean_key, query_rng, q.values.data() + slab(options.q_heads, q_head));
    }
  }
}

// The tensor layers.{layer}.{role} of `heads` heads, its values zeroed.
SyntheticTensor layer_tensor(const SyntheticKvOptions& options, int layer, const char* role, int heads) {
  SyntheticTensor tensor{"layers." + std::to_string(layer) + "." + role, tensor_shape(options, heads), {}};
  tensor.values.resize(static_cast<std::size_t>(options.tokens) * options.dim * heads * options.seqs);
  return tensor;
}

// What the file says of itself: the generator, layout, sizes, seed, and how to read the keys and queries.
std::map<std::string, std::string> synthetic_metadata(const SyntheticKvOptions& options, const std::string& layout) {
  return {
      {"generator", "tqlab synth"},
      {"layout", layout},
      {"layers", std::to_string(options.layers)},
      {"q_heads", std::to_string(options.q_heads)},
      {"kv_heads", std::to_string(options.kv_heads)},
      {"head_dim", std::to_string(options.dim)},
      {"tokens", std::to_string(options.tokens)},
      {"seqs", std::to_string(options.seqs)},
      {"seed", std::to_string(options.seed)},
      {"keys", "post-RoPE"},
      {"attention", "causal"},
      {"scale", "1/sqrt(head_dim)"},
  };
}

}  // namespace

SyntheticKv generate_synthetic_kv(const SyntheticKvOptions& options) {
  validate(options);
  SyntheticKv out;
  out.layout = options.seqs > 1 ? "seq head token dim" : "head token dim";
  for (int layer = 0; layer < options.layers; ++layer) {
    Rng layer_rng(derive_seed({options.seed, kLayerShape, static_cast<std::uint64_t>(layer)}));
    // Key norm / value norm: 10-30x, the first layer far higher.
    const double norm_ratio = layer == 0 ? 60.0 + 60.0 * layer_rng.uniform() : 10.0 + 20.0 * layer_rng.uniform();
    SyntheticTensor q = layer_tensor(options, layer, "q", options.q_heads);
    SyntheticTensor k = layer_tensor(options, layer, "k", options.kv_heads);
    SyntheticTensor v = layer_tensor(options, layer, "v", options.kv_heads);
    for (int head = 0; head < options.kv_heads; ++head) fill_kv_head(options, layer, head, norm_ratio, q, k, v);
    out.tensors.push_back(std::move(q));
    out.tensors.push_back(std::move(k));
    out.tensors.push_back(std::move(v));
  }
  out.metadata = synthetic_metadata(options, out.layout);
  return out;
}

void write_synthetic_kv(const std::string& path, const SyntheticKvOptions& options) {
  const SyntheticKv generated = generate_synthetic_kv(options);
  std::vector<std::vector<std::byte>> encoded;
  std::vector<TensorToWrite> tensors;
  encoded.reserve(generated.tensors.size());
  for (const SyntheticTensor& tensor : generated.tensors) {
    encoded.push_back(encode_floats(tensor.values, options.dtype));
    tensors.push_back({tensor.name, options.dtype, tensor.shape, encoded.back()});
  }
  write_tensor_file(path, tensors, generated.metadata);
}

}  // namespace tqlab
