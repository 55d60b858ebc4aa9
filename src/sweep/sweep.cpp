#include "sweep/sweep.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parallel.h"
#include "kv/kv_slab.h"
#include "metrics/attention_block.h"
#include "metrics/cluster_estimate.h"
#include "metrics/needle.h"
#include "metrics/quantile.h"

namespace tqlab {
namespace {

// Queries measured together: one sgemm row block (its buffers hold rows x chunk).
constexpr int kQueryBlockRows = 128;
constexpr double kTailQuantile = 0.95;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sums kept per (layer, kv head) cluster for reconstruction, per (layer, q head) for attention.
enum ReconstructionSum { kKeyRelMse, kValueRelMse, kKeyNmse, kValueNmse, kKeyCos, kValueCos, kReconstructionSums };
enum AttentionSum { kKl, kTop1, kTop5, kCos, kOutErr, kIpBias, kIpMeanSquare, kAttentionSums };
using ReconstructionSums = std::array<RatioSum, kReconstructionSums>;
using AttentionSums = std::array<RatioSum, kAttentionSums>;

// Reconstruction sums of one role's quantization of one slab: rel_mse, nmse, cos.
struct ErrorSums {
  RatioSum rel_mse, nmse, cos;
};

ErrorSums reconstruction_sums(std::int64_t tokens, int dim, const float* x, const float* decoded) {
  ErrorSums sums;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* a = x + t * dim;
    const float* b = decoded + t * dim;
    double error = 0, energy = 0, cross = 0, decoded_energy = 0;
    for (int c = 0; c < dim; ++c) {
      const double difference = static_cast<double>(a[c]) - b[c];
      error += difference * difference;
      energy += static_cast<double>(a[c]) * a[c];
      cross += static_cast<double>(a[c]) * b[c];
      decoded_energy += static_cast<double>(b[c]) * b[c];
    }
    sums.rel_mse.add(error, energy);
    if (energy > 0) {
      sums.nmse.add(error / energy);
      sums.cos.add(decoded_energy > 0 ? cross / std::sqrt(energy * decoded_energy) : 0.0);
    }
  }
  return sums;
}

// The first NaN/Inf of x (tokens x dim): (token, channel), or (-1, -1).
std::pair<int, int> first_nonfinite(int tokens, int dim, const float* x) {
  for (int t = 0; t < tokens; ++t) {
    for (int c = 0; c < dim; ++c) {
      if (!std::isfinite(x[static_cast<std::size_t>(t) * dim + c])) return {t, c};
    }
  }
  return {-1, -1};
}

bool row_is_finite(int dim, const float* row) {
  for (int c = 0; c < dim; ++c) {
    if (!std::isfinite(row[c])) return false;
  }
  return true;
}

// One distinct quantization of an item: (role, quantizer, seed index).
struct QuantizationSlot {
  Role role = Role::key;
  int quantizer = 0;
  int seed_index = 0;
  std::size_t bytes = 0;
  ErrorSums errors;
  std::vector<float> delta;  // decoded - x, tokens x dim (kept when attention or needle need it)
};

// What one work item produced for one (run, seed).
struct ItemRunSeed {
  std::vector<AttentionSums> attention;  // per q head of the kv head's group
  std::vector<std::vector<double>> kl;   // per q head of the group: every measured query's KL
  std::vector<std::vector<NeedleOutcome>> needle;  // per trial of the item: per margin
};

struct ItemOutput {
  int tokens = 0;  // after skipped tokens are left out
  std::vector<QuantizationSlot> slots;
  std::vector<int> key_slot, value_slot;  // per (run, seed): index into slots
  std::vector<ItemRunSeed> runs;          // per (run, seed)
  std::vector<int> trials;                // planted-needle trial numbers measured here
  std::int64_t skipped_keys = 0, skipped_values = 0, skipped_queries = 0;
  double read_seconds = 0, quantize_seconds = 0, attention_seconds = 0, needle_seconds = 0;
};

// Per (run, seed) totals over the whole sweep.
struct RunSeedTotals {
  std::vector<ReconstructionSums> reconstruction;    // per cluster (layer, kv head)
  std::vector<AttentionSums> attention;              // per (layer, q head)
  std::vector<std::vector<RatioSum>> needle;         // per cluster: [2 * margin + (0 top1, 1 ratio)]
  std::vector<RatioSum> synthetic_weight, synthetic_error;  // per synthetic trial
  std::vector<double> layer_kl_p95;                  // per layer index (NaN: none)
  std::vector<std::vector<double>> head_kl_p95;      // per layer index, q head
  std::optional<UpperQuantile> kl_tail;
  std::vector<double> key_bits, value_bits, effective_bits;  // per layer index: bits
  std::vector<double> key_values, value_values;              // per layer index: values
};

// Cluster (kv head) and q-head unit numbering over the layers.
struct Units {
  std::vector<int> cluster_offset, q_offset;  // per layer index
  int clusters = 0, q_units = 0;
  explicit Units(const KvDump& dump) {
    for (const KvLayerShape& shape : dump.layers()) {
      cluster_offset.push_back(clusters);
      q_offset.push_back(q_units);
      clusters += shape.kv_heads;
      q_units += shape.q_heads;
    }
  }
};

class SweepRunner {
 public:
  SweepRunner(const SweepPlan& plan, const SweepOptions& options)
      : plan_(plan), dump_(*plan.dump), options_(options), units_(dump_),
        seeds_(static_cast<int>(plan.config.seeds.size())), run_seeds_(static_cast<int>(plan.runs.size()) * seeds_),
        trials_(plan.needle_trials), margins_(plan.config.metrics.needle_options.margins) {
    std::int64_t queries = 0;
    for (const KvLayerShape& shape : dump_.layers()) queries += std::int64_t{shape.seqs} * shape.q_heads * shape.tokens;
    const std::size_t layers = dump_.layers().size();
    totals_.resize(static_cast<std::size_t>(run_seeds_));
    for (RunSeedTotals& totals : totals_) {
      totals.reconstruction.resize(static_cast<std::size_t>(units_.clusters));
      totals.attention.resize(static_cast<std::size_t>(units_.q_units));
      totals.needle.assign(static_cast<std::size_t>(units_.clusters), std::vector<RatioSum>(2 * margins_.size()));
      totals.layer_kl_p95.assign(layers, NAN);
      totals.head_kl_p95.resize(layers);
      totals.kl_tail.emplace(kTailQuantile, std::max<std::int64_t>(queries, 1));
      for (auto* series : {&totals.key_bits, &totals.value_bits, &totals.effective_bits, &totals.key_values,
                           &totals.value_values}) {
        series->assign(layers, 0.0);
      }
    }
  }

  SweepResults run() {
    const Clock::time_point start = Clock::now();
    const int threads = resolve_thread_count(options_.threads);
    std::size_t total_items = 0;
    for (std::size_t li = 0; li < dump_.layers().size(); ++li) {
      total_items += static_cast<std::size_t>(dump_.layers()[li].seqs * dump_.layers()[li].kv_heads);
    }
    const int synthetic_trials = plan_.synthetic_needle ? plan_.config.metrics.needle_options.synth_trials : 0;
    total_items += static_cast<std::size_t>(synthetic_trials);
    std::atomic<std::size_t> done{0};
    const auto advance = [&](int layer) {
      const std::size_t now = ++done;
      if (options_.on_progress) options_.on_progress(now, total_items, layer);
    };

    for (std::size_t li = 0; li < dump_.layers().size(); ++li) {
      const KvLayerShape& shape = dump_.layers()[li];
      const std::size_t items = static_cast<std::size_t>(shape.seqs) * static_cast<std::size_t>(shape.kv_heads);
      std::vector<ItemOutput> outputs(items);
      parallel_for(items, threads, [&](std::size_t item, int) {
        const int seq = static_cast<int>(item) / shape.kv_heads;
        const int head = static_cast<int>(item) % shape.kv_heads;
        process_item(static_cast<int>(li), seq, head, outputs[item]);
        advance(shape.layer);
      });
      dump_.release_layer(static_cast<int>(li));
      reduce_layer(static_cast<int>(li), outputs);
    }
    if (synthetic_trials > 0) run_synthetic_needle(synthetic_trials, threads, advance);

    SweepResults results = summarize();
    results.needle_trials = static_cast<int>(trials_.size());
    results.needle_trials_measured = measured_trials_;
    results.synthetic_trials = synthetic_trials;
    results.timing = timing_;
    results.timing.threads = threads;
    results.timing.total_seconds = seconds_since(start);
    return results;
  }

 private:
  const PlannedRun& run_of(int run_seed) const { return plan_.runs[static_cast<std::size_t>(run_seed / seeds_)]; }
  std::uint64_t seed_of(int run_seed) const { return plan_.config.seeds[static_cast<std::size_t>(run_seed % seeds_)]; }
  ExactTokens exact_of(int run_seed) const {
    return run_of(run_seed).exact(plan_.config.metrics.attention_options.window_mode);
  }

  // Reads one kv head's K, V (and its q heads' Q) slabs, leaves out or refuses non-finite vectors.
  struct ItemData {
    int tokens = 0;
    std::vector<float> keys, values;
    std::vector<std::vector<float>> queries;  // per q head of the group
    std::vector<std::vector<bool>> query_ok;  // per q head: measured or skipped
    bool compacted = false;                   // tokens were left out
  };

  ItemData read_item(int li, int seq, int head, ItemOutput& out) const {
    const KvLayerShape& shape = dump_.layers()[static_cast<std::size_t>(li)];
    ItemData data;
    data.tokens = shape.tokens;
    const KvSlab key_slab{Role::key, li, seq, head}, value_slab{Role::value, li, seq, head};
    read_slab(dump_, key_slab, data.keys);
    read_slab(dump_, value_slab, data.values);
    const bool need_queries = plan_.attention || plan_.needle;
    const int group = need_queries ? shape.q_heads / shape.kv_heads : 0;
    for (int g = 0; g < group; ++g) {
      read_slab(dump_, KvSlab{Role::query, li, seq, head * group + g}, data.queries.emplace_back());
    }
    const bool skip = plan_.config.data.nonfinite == NonfiniteMode::skip;
    const auto refuse = [&](const KvSlab& slab, int dim, const std::vector<float>& x) {
      const auto [token, channel] = first_nonfinite(shape.tokens, dim, x.data());
      if (token < 0) return;
      fail("'{}': tensor '{}', sequence {}, head {}: non-finite value ({}) at token {}, channel {}; set "
           "data.nonfinite to \"skip\" in the config to leave such vectors out",
           dump_.file().path(), slab_tensor_name(dump_, slab), slab.seq, slab.head,
           x[static_cast<std::size_t>(token) * dim + channel], token, channel);
    };
    if (!skip) {
      refuse(key_slab, shape.key_dim, data.keys);
      refuse(value_slab, shape.value_dim, data.values);
      for (int g = 0; g < group; ++g) {
        refuse(KvSlab{Role::query, li, seq, head * group + g}, shape.key_dim, data.queries[static_cast<std::size_t>(g)]);
      }
      data.query_ok.assign(static_cast<std::size_t>(group), std::vector<bool>(static_cast<std::size_t>(shape.tokens), true));
      return data;
    }
    // Skip: a token whose key or value is not finite leaves the sequence
    // (its query too); a query that is not finite is not measured.
    std::vector<int> kept;
    for (int t = 0; t < shape.tokens; ++t) {
      const bool key_ok = row_is_finite(shape.key_dim, data.keys.data() + static_cast<std::size_t>(t) * shape.key_dim);
      const bool value_ok = row_is_finite(shape.value_dim, data.values.data() + static_cast<std::size_t>(t) * shape.value_dim);
      out.skipped_keys += !key_ok;
      out.skipped_values += !value_ok;
      if (key_ok && value_ok) kept.push_back(t);
    }
    const auto compact = [&](std::vector<float>& x, int dim) {
      for (std::size_t i = 0; i < kept.size(); ++i) {
        std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(kept[i]) * dim, dim, x.begin() + static_cast<std::ptrdiff_t>(i) * dim);
      }
      x.resize(kept.size() * static_cast<std::size_t>(dim));
    };
    data.compacted = static_cast<int>(kept.size()) != shape.tokens;
    if (data.compacted) {
      compact(data.keys, shape.key_dim);
      compact(data.values, shape.value_dim);
      for (std::vector<float>& q : data.queries) compact(q, shape.key_dim);
      data.tokens = static_cast<int>(kept.size());
    }
    for (std::vector<float>& q : data.queries) {
      std::vector<bool>& ok = data.query_ok.emplace_back(static_cast<std::size_t>(data.tokens), true);
      for (int t = 0; t < data.tokens; ++t) {
        float* row = q.data() + static_cast<std::size_t>(t) * shape.key_dim;
        if (row_is_finite(shape.key_dim, row)) continue;
        ok[static_cast<std::size_t>(t)] = false;
        std::fill(row, row + shape.key_dim, 0.0f);  // measured by nobody; zeros keep the sgemm finite
        ++out.skipped_queries;
      }
    }
    return data;
  }

  void process_item(int li, int seq, int head, ItemOutput& out) const {
    const KvLayerShape& shape = dump_.layers()[static_cast<std::size_t>(li)];
    Clock::time_point start = Clock::now();
    ItemData data = read_item(li, seq, head, out);
    out.tokens = data.tokens;
    out.read_seconds = seconds_since(start);
    if (data.tokens == 0) return;

    // Each distinct (role, quantizer, seed) once.
    start = Clock::now();
    const bool keep_delta = plan_.attention || plan_.needle;
    const auto slot_for = [&](Role role, int quantizer, int seed_index) {
      for (std::size_t i = 0; i < out.slots.size(); ++i) {
        const QuantizationSlot& slot = out.slots[i];
        if (slot.role == role && slot.quantizer == quantizer && slot.seed_index == seed_index) return static_cast<int>(i);
      }
      QuantizationSlot& slot = out.slots.emplace_back();
      slot.role = role;
      slot.quantizer = quantizer;
      slot.seed_index = seed_index;
      return static_cast<int>(out.slots.size()) - 1;
    };
    out.key_slot.resize(static_cast<std::size_t>(run_seeds_));
    out.value_slot.resize(static_cast<std::size_t>(run_seeds_));
    for (int rs = 0; rs < run_seeds_; ++rs) {
      const PlannedRun& run = run_of(rs);
      out.key_slot[static_cast<std::size_t>(rs)] = slot_for(Role::key, run.k_quantizer[static_cast<std::size_t>(li)][static_cast<std::size_t>(head)], rs % seeds_);
      out.value_slot[static_cast<std::size_t>(rs)] = slot_for(Role::value, run.v_quantizer[static_cast<std::size_t>(li)][static_cast<std::size_t>(head)], rs % seeds_);
    }
    std::vector<float> decoded;
    for (QuantizationSlot& slot : out.slots) {
      const KvSlab where{slot.role, li, seq, head};
      const int dim = slot.role == Role::key ? shape.key_dim : shape.value_dim;
      const std::vector<float>& x = slot.role == Role::key ? data.keys : data.values;
      decoded.resize(x.size());
      slot.bytes = fake_quantize_rows(dump_, where, *plan_.quantizers[static_cast<std::size_t>(slot.quantizer)],
                                      plan_.config.seeds[static_cast<std::size_t>(slot.seed_index)], data.tokens,
                                      x.data(), decoded.data());
      slot.errors = reconstruction_sums(data.tokens, dim, x.data(), decoded.data());
      if (keep_delta) {
        slot.delta.resize(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) slot.delta[i] = decoded[i] - x[i];
      }
    }
    out.quantize_seconds = seconds_since(start);

    out.runs.resize(static_cast<std::size_t>(run_seeds_));
    if (plan_.attention) {
      start = Clock::now();
      measure_attention(li, data, out);
      out.attention_seconds = seconds_since(start);
    }
    if (plan_.needle) {
      start = Clock::now();
      measure_needles(li, seq, head, data, out);
      out.needle_seconds = seconds_since(start);
    }
  }

  void measure_attention(int li, const ItemData& data, ItemOutput& out) const {
    const KvLayerShape& shape = dump_.layers()[static_cast<std::size_t>(li)];
    const AttentionConfig& config = plan_.config.metrics.attention_options;
    const double scale = attention_scale(config, shape.key_dim);
    const int group = static_cast<int>(data.queries.size());
    for (ItemRunSeed& run : out.runs) {
      run.attention.assign(static_cast<std::size_t>(group), AttentionSums{});
      run.kl.assign(static_cast<std::size_t>(group), {});
    }
    // Runs by the key quantization they share, in slot order.
    std::map<int, std::vector<int>> runs_of_key_slot;
    for (int rs = 0; rs < run_seeds_; ++rs) runs_of_key_slot[out.key_slot[static_cast<std::size_t>(rs)]].push_back(rs);

    AttentionBlock block;
    for (int g = 0; g < group; ++g) {
      const std::vector<float>& q = data.queries[static_cast<std::size_t>(g)];
      const std::vector<bool>& measured = data.query_ok[static_cast<std::size_t>(g)];
      for (const ChunkGeometry& chunk : split_chunks(data.tokens, config.chunk)) {
        const auto key_at = static_cast<std::size_t>(chunk.start) * shape.key_dim;
        const auto value_at = static_cast<std::size_t>(chunk.start) * shape.value_dim;
        for (int first = 0; first < chunk.tokens; first += kQueryBlockRows) {
          const int rows = std::min(kQueryBlockRows, chunk.tokens - first);
          block.set_exact(chunk, first, rows, config.causal, scale, shape.key_dim, shape.value_dim,
                          q.data() + static_cast<std::size_t>(chunk.start + first) * shape.key_dim,
                          data.keys.data() + key_at, data.values.data() + value_at);
          for (const auto& [key_slot, run_seeds] : runs_of_key_slot) {
            block.set_key_error(out.slots[static_cast<std::size_t>(key_slot)].delta.data() + key_at);
            for (int rs : run_seeds) {
              ItemRunSeed& result = out.runs[static_cast<std::size_t>(rs)];
              AttentionSums& sums = result.attention[static_cast<std::size_t>(g)];
              std::vector<double>& kl = result.kl[static_cast<std::size_t>(g)];
              const QuantizationSlot& value = out.slots[static_cast<std::size_t>(out.value_slot[static_cast<std::size_t>(rs)])];
              block.compare(exact_of(rs), value.delta.data() + value_at,
                            [&](int row, const QueryAttentionError& error, std::optional<double> output_error) {
                              if (!measured[static_cast<std::size_t>(chunk.start + first + row)]) return;
                              sums[kKl].add(error.kl);
                              sums[kTop1].add(error.top1 ? 1.0 : 0.0);
                              sums[kTop5].add(error.top5 ? 1.0 : 0.0);
                              sums[kCos].add(error.cosine);
                              if (output_error) sums[kOutErr].add(*output_error);
                              sums[kIpBias].add(error.ip_bias);
                              sums[kIpMeanSquare].add(error.ip_mean_square);
                              kl.push_back(error.kl);
                            });
            }
          }
        }
      }
    }
  }

  void measure_needles(int li, int seq, int head, const ItemData& data, ItemOutput& out) const {
    const KvLayerShape& shape = dump_.layers()[static_cast<std::size_t>(li)];
    const AttentionConfig& config = plan_.config.metrics.attention_options;
    const double scale = attention_scale(config, shape.key_dim);
    const int group = shape.q_heads / shape.kv_heads;
    const int dim = shape.key_dim;
    const KvSlab keys{Role::key, li, seq, head};
    for (ItemRunSeed& run : out.runs) run.needle.clear();
    std::map<int, std::vector<int>> runs_of_key_slot;
    for (int rs = 0; rs < run_seeds_; ++rs) runs_of_key_slot[out.key_slot[static_cast<std::size_t>(rs)]].push_back(rs);
    std::vector<float> planted_keys, decoded(data.keys.size());
    for (std::size_t trial = 0; trial < trials_.size(); ++trial) {
      const NeedleTrial& pick = trials_[trial];
      if (pick.layer_index != li || pick.seq != seq || pick.q_head / group != head) continue;
      // Trials were placed on the full sequence: one that lost tokens is not measured.
      if (data.compacted) continue;
      const float* q = data.queries[static_cast<std::size_t>(pick.q_head % group)].data() + static_cast<std::size_t>(pick.query) * dim;
      const ChunkGeometry chunk{pick.query / config.chunk * config.chunk,
                                std::min(config.chunk, data.tokens - pick.query / config.chunk * config.chunk)};
      const int query_local = pick.query - chunk.start;
      const int key_local = pick.key - chunk.start;
      const int attended = attended_keys(chunk, config.causal, query_local);
      const std::vector<double> exact_logits = needle_logits(dim, attended, chunk, q, data.keys.data(), scale);
      // Nor one whose needle cannot be planted, or would lie far outside the data's
      // range, at some margin (needle.h): a zero query, or one of (nearly) zero norm.
      const float* k_j = data.keys.data() + static_cast<std::size_t>(pick.key) * dim;
      std::vector<PlantedNeedle> needles;
      for (double margin : margins_) needles.push_back(plant_needle(dim, exact_logits, key_local, q, k_j, scale, margin));
      if (!needles_are_plantable(needles, dim, attended, chunk, data.keys.data())) continue;
      out.trials.push_back(static_cast<int>(trial));
      for (ItemRunSeed& run : out.runs) run.needle.emplace_back(margins_.size());
      // Quantizers whose tokens are independent: the other keys are the item's
      // quantization (k + delta), and only the planted key is quantized again.
      std::map<int, std::vector<double>> unplanted_logits;
      for (const auto& [key_slot, run_seeds] : runs_of_key_slot) {
        const QuantizationSlot& slot = out.slots[static_cast<std::size_t>(key_slot)];
        if (!plan_.quantizers[static_cast<std::size_t>(slot.quantizer)]->encodes_tokens_independently()) continue;
        std::vector<double>& logits = unplanted_logits[key_slot];
        for (int i = 0; i < attended; ++i) {
          const std::size_t row = static_cast<std::size_t>(chunk.start + i) * dim;
          double sum = 0;
          for (int c = 0; c < dim; ++c) sum += static_cast<double>(q[c]) * (data.keys[row + c] + slot.delta[row + c]);
          logits.push_back(scale * sum);
        }
      }
      for (std::size_t m = 0; m < margins_.size(); ++m) {
        const PlantedNeedle& planted = needles[m];
        std::vector<double> planted_logits = exact_logits;
        const double planted_logit = needle_logits(dim, 1, ChunkGeometry{0, 1}, q, planted.key.data(), scale)[0];
        planted_logits[static_cast<std::size_t>(key_local)] = planted_logit;
        for (const auto& [key_slot, run_seeds] : runs_of_key_slot) {
          const QuantizationSlot& slot = out.slots[static_cast<std::size_t>(key_slot)];
          const Quantizer& quantizer = *plan_.quantizers[static_cast<std::size_t>(slot.quantizer)];
          const std::uint64_t seed = plan_.config.seeds[static_cast<std::size_t>(slot.seed_index)];
          std::vector<double> quantized_logits;
          if (const auto found = unplanted_logits.find(key_slot); found != unplanted_logits.end()) {
            std::vector<float> row(static_cast<std::size_t>(dim));
            (void)fake_quantize_rows(dump_, keys, quantizer, seed, 1, planted.key.data(), row.data());
            quantized_logits = found->second;
            quantized_logits[static_cast<std::size_t>(key_local)] = needle_logits(dim, 1, ChunkGeometry{0, 1}, q, row.data(), scale)[0];
          } else {
            planted_keys = data.keys;
            std::copy(planted.key.begin(), planted.key.end(), planted_keys.begin() + static_cast<std::ptrdiff_t>(pick.key) * dim);
            (void)fake_quantize_rows(dump_, keys, quantizer, seed, data.tokens, planted_keys.data(), decoded.data());
            quantized_logits = needle_logits(dim, attended, chunk, q, decoded.data(), scale);
          }
          for (int rs : run_seeds) {
            out.runs[static_cast<std::size_t>(rs)].needle.back()[m] =
                measure_needle(planted_logits, quantized_logits, key_local, planted_logit, planted.exact_weight,
                               exact_of(rs), chunk, query_local);
          }
        }
      }
    }
  }

  // Adds one layer's items to the totals, in item order.
  void reduce_layer(int li, std::vector<ItemOutput>& outputs) {
    const KvLayerShape& shape = dump_.layers()[static_cast<std::size_t>(li)];
    const AttentionConfig& config = plan_.config.metrics.attention_options;
    const int group = shape.q_heads > 0 ? shape.q_heads / shape.kv_heads : 0;
    std::vector<std::vector<double>> layer_kl(static_cast<std::size_t>(run_seeds_));
    std::vector<std::vector<std::vector<double>>> head_kl(
        static_cast<std::size_t>(run_seeds_), std::vector<std::vector<double>>(static_cast<std::size_t>(shape.q_heads)));
    for (std::size_t item = 0; item < outputs.size(); ++item) {
      ItemOutput& out = outputs[item];
      const int head = static_cast<int>(item) % shape.kv_heads;
      const auto cluster = static_cast<std::size_t>(units_.cluster_offset[static_cast<std::size_t>(li)] + head);
      timing_.read_seconds += out.read_seconds;
      timing_.quantize_seconds += out.quantize_seconds;
      timing_.attention_seconds += out.attention_seconds;
      timing_.needle_seconds += out.needle_seconds;
      skipped_keys_ += out.skipped_keys;
      skipped_values_ += out.skipped_values;
      skipped_queries_ += out.skipped_queries;
      measured_trials_ += static_cast<int>(out.trials.size());
      if (out.tokens == 0) continue;
      for (int rs = 0; rs < run_seeds_; ++rs) {
        RunSeedTotals& totals = totals_[static_cast<std::size_t>(rs)];
        const QuantizationSlot& key = out.slots[static_cast<std::size_t>(out.key_slot[static_cast<std::size_t>(rs)])];
        const QuantizationSlot& value = out.slots[static_cast<std::size_t>(out.value_slot[static_cast<std::size_t>(rs)])];
        ReconstructionSums& reconstruction = totals.reconstruction[cluster];
        reconstruction[kKeyRelMse] += key.errors.rel_mse;
        reconstruction[kValueRelMse] += value.errors.rel_mse;
        reconstruction[kKeyNmse] += key.errors.nmse;
        reconstruction[kValueNmse] += value.errors.nmse;
        reconstruction[kKeyCos] += key.errors.cos;
        reconstruction[kValueCos] += value.errors.cos;

        const auto layer = static_cast<std::size_t>(li);
        const double key_values = static_cast<double>(out.tokens) * shape.key_dim;
        const double value_values = static_cast<double>(out.tokens) * shape.value_dim;
        totals.key_bits[layer] += 8.0 * static_cast<double>(key.bytes);
        totals.value_bits[layer] += 8.0 * static_cast<double>(value.bytes);
        totals.key_values[layer] += key_values;
        totals.value_values[layer] += value_values;
        // Exact tokens at 16 bits, the rest at the quantizer's bits per value.
        const double exact_share =
            static_cast<double>(exact_of(rs).cached_exact_tokens(out.tokens, config.chunk)) / out.tokens;
        totals.effective_bits[layer] += (1 - exact_share) * 8.0 * static_cast<double>(key.bytes + value.bytes) +
                                        exact_share * 16.0 * (key_values + value_values);

        const ItemRunSeed& result = out.runs[static_cast<std::size_t>(rs)];
        for (std::size_t g = 0; g < result.attention.size(); ++g) {
          const int q_head = head * group + static_cast<int>(g);
          AttentionSums& sums = totals.attention[static_cast<std::size_t>(units_.q_offset[layer] + q_head)];
          for (int s = 0; s < kAttentionSums; ++s) sums[static_cast<std::size_t>(s)] += result.attention[g][static_cast<std::size_t>(s)];
          const std::vector<double>& kl = result.kl[g];
          layer_kl[static_cast<std::size_t>(rs)].insert(layer_kl[static_cast<std::size_t>(rs)].end(), kl.begin(), kl.end());
          if (plan_.config.metrics.per_head) {
            std::vector<double>& of_head = head_kl[static_cast<std::size_t>(rs)][static_cast<std::size_t>(q_head)];
            of_head.insert(of_head.end(), kl.begin(), kl.end());
          }
          for (double value_kl : kl) totals.kl_tail->add(value_kl);
        }
        for (std::size_t t = 0; t < result.needle.size(); ++t) {
          for (std::size_t m = 0; m < margins_.size(); ++m) {
            totals.needle[cluster][2 * m].add(result.needle[t][m].top1 ? 1.0 : 0.0);
            totals.needle[cluster][2 * m + 1].add(result.needle[t][m].weight_ratio);
          }
        }
      }
      out = ItemOutput{};  // the layer's item memory goes now
    }
    for (int rs = 0; rs < run_seeds_; ++rs) {
      RunSeedTotals& totals = totals_[static_cast<std::size_t>(rs)];
      totals.layer_kl_p95[static_cast<std::size_t>(li)] = quantile(layer_kl[static_cast<std::size_t>(rs)], kTailQuantile).value_or(NAN);
      if (plan_.config.metrics.per_head) {
        for (std::vector<double>& of_head : head_kl[static_cast<std::size_t>(rs)]) {
          totals.head_kl_p95[static_cast<std::size_t>(li)].push_back(quantile(of_head, kTailQuantile).value_or(NAN));
        }
      }
    }
  }

  void run_synthetic_needle(int trials, int threads, const std::function<void(int)>& advance) {
    // Distinct (quantizer, seed) pairs, and the runs that share each.
    std::vector<std::pair<int, int>> pairs;
    std::vector<int> pair_of(static_cast<std::size_t>(run_seeds_), -1);
    for (int rs = 0; rs < run_seeds_; ++rs) {
      const int quantizer = run_of(rs).synthetic_needle_quantizer;
      if (quantizer < 0) continue;
      const std::pair<int, int> key{quantizer, rs % seeds_};
      const auto found = std::find(pairs.begin(), pairs.end(), key);
      pair_of[static_cast<std::size_t>(rs)] = static_cast<int>(found - pairs.begin());
      if (found == pairs.end()) pairs.push_back(key);
    }
    std::vector<std::vector<std::pair<double, double>>> outcomes(static_cast<std::size_t>(trials));
    std::vector<double> seconds(static_cast<std::size_t>(trials));
    parallel_for(static_cast<std::size_t>(trials), threads, [&](std::size_t trial, int) {
      const Clock::time_point start = Clock::now();
      const SyntheticNeedle needle = make_synthetic_needle(static_cast<int>(trial));
      for (const auto& [quantizer, seed_index] : pairs) {
        try {
          outcomes[trial].push_back(measure_synthetic_needle(needle, *plan_.quantizers[static_cast<std::size_t>(quantizer)],
                                                             plan_.config.seeds[static_cast<std::size_t>(seed_index)],
                                                             static_cast<int>(trial)));
        } catch (const InputError& error) {
          fail("synthetic needle trial {} with '{}': {}", trial, plan_.quantizer_specs[static_cast<std::size_t>(quantizer)],
               error.what());
        }
      }
      seconds[trial] = seconds_since(start);
      advance(-1);
    });
    for (int rs = 0; rs < run_seeds_; ++rs) {
      RunSeedTotals& totals = totals_[static_cast<std::size_t>(rs)];
      if (pair_of[static_cast<std::size_t>(rs)] < 0) continue;
      for (int trial = 0; trial < trials; ++trial) {
        const auto& [weight, error] = outcomes[static_cast<std::size_t>(trial)][static_cast<std::size_t>(pair_of[static_cast<std::size_t>(rs)])];
        totals.synthetic_weight.emplace_back().add(weight);
        totals.synthetic_error.emplace_back().add(error);
      }
    }
    for (double spent : seconds) timing_.needle_seconds += spent;
  }

  SweepResults summarize() const;

  const SweepPlan& plan_;
  const KvDump& dump_;
  const SweepOptions& options_;
  Units units_;
  int seeds_;
  int run_seeds_;
  const std::vector<NeedleTrial>& trials_;
  const std::vector<double>& margins_;
  std::vector<RunSeedTotals> totals_;
  SweepTiming timing_;
  std::int64_t skipped_keys_ = 0, skipped_values_ = 0, skipped_queries_ = 0;
  int measured_trials_ = 0;
};

// --- Summaries -------------------------------------------------------------

// Which clusters a summary covers: every layer, or one.
constexpr int kAllLayers = -1;

MetricSummary summarize_clusters(const std::vector<std::vector<RatioSum>>& per_seed, bool root_of_mean) {
  MetricSummary summary;
  const std::size_t seeds = per_seed.size();
  std::vector<RatioSum> averaged(per_seed.front().size());
  double sum = 0;
  bool all = true;
  for (const std::vector<RatioSum>& clusters : per_seed) {
    ClusterEstimate estimate = cluster_estimate(clusters);
    if (root_of_mean) estimate = square_root(estimate);
    summary.per_seed.push_back(estimate.value);
    all = all && estimate.value.has_value();
    if (estimate.value) sum += *estimate.value;
    for (std::size_t c = 0; c < clusters.size(); ++c) {
      averaged[c].numerator += clusters[c].numerator / static_cast<double>(seeds);
      averaged[c].denominator += clusters[c].denominator / static_cast<double>(seeds);
    }
  }
  if (!all) return summary;
  summary.mean = sum / static_cast<double>(seeds);
  ClusterEstimate pooled = cluster_estimate(averaged);
  if (root_of_mean) pooled = square_root(pooled);
  summary.standard_error = pooled.standard_error;
  if (seeds > 1) {
    double spread = 0;
    for (const auto& value : summary.per_seed) spread += (*value - *summary.mean) * (*value - *summary.mean);
    summary.seed_std = std::sqrt(spread / static_cast<double>(seeds - 1));
  }
  return summary;
}

// A statistic without a standard error (a percentile): per seed, their mean and std.
MetricSummary summarize_values(const std::vector<double>& per_seed) {
  MetricSummary summary;
  double sum = 0;
  bool all = true;
  for (double value : per_seed) {
    if (std::isnan(value)) {
      summary.per_seed.push_back(std::nullopt);
      all = false;
    } else {
      summary.per_seed.push_back(value);
      sum += value;
    }
  }
  if (!all || per_seed.empty()) return summary;
  summary.mean = sum / static_cast<double>(per_seed.size());
  if (per_seed.size() > 1) {
    double spread = 0;
    for (double value : per_seed) spread += (value - *summary.mean) * (value - *summary.mean);
    summary.seed_std = std::sqrt(spread / static_cast<double>(per_seed.size() - 1));
  }
  return summary;
}

MetricSummary null_summary(int seeds) {
  MetricSummary summary;
  summary.per_seed.assign(static_cast<std::size_t>(seeds), std::nullopt);
  return summary;
}

SweepResults SweepRunner::summarize() const {
  SweepResults results;
  results.skipped_key_vectors = skipped_keys_;
  results.skipped_value_vectors = skipped_values_;
  results.skipped_query_vectors = skipped_queries_;
  const MetricsConfig& metrics = plan_.config.metrics;
  const auto layers = static_cast<int>(dump_.layers().size());

  // Cluster sums of one (run, seed) over every layer or one, by kind.
  const auto layer_clusters = [&](int layer, const auto& per_cluster) {
    std::vector<RatioSum> clusters;
    for (int li = 0; li < layers; ++li) {
      if (layer != kAllLayers && layer != li) continue;
      for (int head = 0; head < dump_.layers()[static_cast<std::size_t>(li)].kv_heads; ++head) {
        clusters.push_back(per_cluster(li, head));
      }
    }
    return clusters;
  };
  const auto reconstruction = [&](int rs, int sum, int layer) {
    return layer_clusters(layer, [&](int li, int head) {
      return totals_[static_cast<std::size_t>(rs)].reconstruction[static_cast<std::size_t>(units_.cluster_offset[static_cast<std::size_t>(li)] + head)][static_cast<std::size_t>(sum)];
    });
  };
  const auto attention = [&](int rs, int sum, int layer) {
    return layer_clusters(layer, [&](int li, int head) {
      const KvLayerShape& shape = dump_.layers()[static_cast<std::size_t>(li)];
      const int group = shape.q_heads / shape.kv_heads;
      RatioSum cluster;
      for (int g = 0; g < group; ++g) {
        cluster += totals_[static_cast<std::size_t>(rs)].attention[static_cast<std::size_t>(units_.q_offset[static_cast<std::size_t>(li)] + head * group + g)][static_cast<std::size_t>(sum)];
      }
      return cluster;
    });
  };
  const auto needle = [&](int rs, std::size_t index, int layer) {
    return layer_clusters(layer, [&](int li, int head) {
      return totals_[static_cast<std::size_t>(rs)].needle[static_cast<std::size_t>(units_.cluster_offset[static_cast<std::size_t>(li)] + head)][index];
    });
  };

  for (std::size_t r = 0; r < plan_.runs.size(); ++r) {
    RunResult result;
    result.run = &plan_.runs[r];
    const int first = static_cast<int>(r) * seeds_;
    const auto seeds_of = [&](const auto& clusters_of_seed) {
      std::vector<std::vector<RatioSum>> per_seed;
      for (int s = 0; s < seeds_; ++s) per_seed.push_back(clusters_of_seed(first + s));
      return per_seed;
    };
    // One metric: the run's summary, its per-layer seed means, and per head when asked.
    const auto add = [&](const std::string& name, const auto& clusters_of, bool root, auto per_head) {
      result.metrics.emplace_back(name, summarize_clusters(seeds_of([&](int rs) { return clusters_of(rs, kAllLayers); }), root));
      std::vector<std::optional<double>> by_layer;
      for (int li = 0; li < layers; ++li) {
        by_layer.push_back(summarize_clusters(seeds_of([&](int rs) { return clusters_of(rs, li); }), root).mean);
      }
      result.per_layer.emplace_back(name, std::move(by_layer));
      if (metrics.per_head) result.per_head.emplace_back(name, per_head(root));
    };
    const auto add_null = [&](const std::string& name) {
      result.metrics.emplace_back(name, null_summary(seeds_));
      result.per_layer.emplace_back(name, std::vector<std::optional<double>>(static_cast<std::size_t>(layers)));
    };
    // Per head: one value per (layer, head), the seed mean of that unit's ratio.
    const auto heads_of = [&](const auto& unit_sum, bool q_heads) {
      return [&, q_heads](bool root) {
        std::vector<std::vector<std::optional<double>>> table;
        for (int li = 0; li < layers; ++li) {
          const KvLayerShape& shape = dump_.layers()[static_cast<std::size_t>(li)];
          std::vector<std::optional<double>>& row = table.emplace_back();
          for (int head = 0; head < (q_heads ? shape.q_heads : shape.kv_heads); ++head) {
            row.push_back(summarize_clusters(seeds_of([&](int rs) { return std::vector<RatioSum>{unit_sum(rs, li, head)}; }), root).mean);
          }
        }
        return table;
      };
    };

    if (metrics.reconstruction) {
      const char* names[] = {"k_rel_mse", "v_rel_mse", "k_nmse", "v_nmse", "k_cos", "v_cos"};
      for (int sum = 0; sum < kReconstructionSums; ++sum) {
        add(names[sum], [&](int rs, int layer) { return reconstruction(rs, sum, layer); }, false,
            heads_of([&](int rs, int li, int head) {
              return totals_[static_cast<std::size_t>(rs)].reconstruction[static_cast<std::size_t>(units_.cluster_offset[static_cast<std::size_t>(li)] + head)][static_cast<std::size_t>(sum)];
            }, false));
      }
    }
    if (metrics.attention) {
      const std::pair<const char*, int> named[] = {{"attn_kl", kKl},   {"attn_top1", kTop1},          {"attn_top5", kTop5},
                                                   {"attn_cos", kCos}, {"attn_out_rel_err", kOutErr}, {"ip_bias", kIpBias},
                                                   {"ip_rmse", kIpMeanSquare}};
      for (const auto& entry : named) {
        // Not a structured binding: clang before 16 (the fuzz build's clang 14) cannot capture one.
        const char* const name = entry.first;
        const int sum = entry.second;
        if (!plan_.attention) {
          add_null(name);
          if (std::string(name) == "attn_kl") add_null("attn_kl_p95");
          continue;
        }
        const bool root = sum == kIpMeanSquare;
        add(name, [&, sum](int rs, int layer) { return attention(rs, sum, layer); }, root,
            heads_of([&, sum](int rs, int li, int head) {
              return totals_[static_cast<std::size_t>(rs)].attention[static_cast<std::size_t>(units_.q_offset[static_cast<std::size_t>(li)] + head)][static_cast<std::size_t>(sum)];
            }, true));
        if (sum == kKl) {
          std::vector<double> tails;
          for (int s = 0; s < seeds_; ++s) tails.push_back(totals_[static_cast<std::size_t>(first + s)].kl_tail->value().value_or(NAN));
          result.metrics.emplace_back("attn_kl_p95", summarize_values(tails));
          std::vector<std::optional<double>> by_layer;
          for (int li = 0; li < layers; ++li) {
            std::vector<double> values;
            for (int s = 0; s < seeds_; ++s) values.push_back(totals_[static_cast<std::size_t>(first + s)].layer_kl_p95[static_cast<std::size_t>(li)]);
            by_layer.push_back(summarize_values(values).mean);
          }
          result.per_layer.emplace_back("attn_kl_p95", std::move(by_layer));
          if (metrics.per_head) {
            std::vector<std::vector<std::optional<double>>> table;
            for (int li = 0; li < layers; ++li) {
              std::vector<std::optional<double>>& row = table.emplace_back();
              for (std::size_t head = 0; head < totals_[static_cast<std::size_t>(first)].head_kl_p95[static_cast<std::size_t>(li)].size(); ++head) {
                std::vector<double> values;
                for (int s = 0; s < seeds_; ++s) values.push_back(totals_[static_cast<std::size_t>(first + s)].head_kl_p95[static_cast<std::size_t>(li)][head]);
                row.push_back(summarize_values(values).mean);
              }
            }
            result.per_head.emplace_back("attn_kl_p95", std::move(table));
          }
        }
      }
    }
    if (metrics.needle) {
      const NeedleConfig& needle_config = metrics.needle_options;
      if (needle_config.trials > 0) {
        for (std::size_t m = 0; m < margins_.size(); ++m) {
          for (int kind = 0; kind < 2; ++kind) {
            const std::string name = fmt::format("{}@{}", kind == 0 ? "needle_top1" : "needle_weight_ratio", margins_[m]);
            if (!plan_.needle || trials_.empty()) {
              add_null(name);
              continue;
            }
            const std::size_t index = 2 * m + static_cast<std::size_t>(kind);
            add(name, [&, index](int rs, int layer) { return needle(rs, index, layer); }, false,
                heads_of([&, index](int rs, int li, int head) {
                  return totals_[static_cast<std::size_t>(rs)].needle[static_cast<std::size_t>(units_.cluster_offset[static_cast<std::size_t>(li)] + head)][index];
                }, false));
          }
        }
      }
      if (needle_config.synth_trials > 0) {
        for (int kind = 0; kind < 2; ++kind) {
          const char* name = kind == 0 ? "needle_synth_weight" : "needle_synth_out_err";
          if (result.run->synthetic_needle_quantizer < 0) {
            result.metrics.emplace_back(name, null_summary(seeds_));
            continue;
          }
          result.metrics.emplace_back(name, summarize_clusters(seeds_of([&](int rs) {
            const RunSeedTotals& totals = totals_[static_cast<std::size_t>(rs)];
            return kind == 0 ? totals.synthetic_weight : totals.synthetic_error;
          }), false));
        }
      }
    }

    // Bits, from the first seed (packed sizes do not depend on the seed).
    const RunSeedTotals& bits = totals_[static_cast<std::size_t>(first)];
    const auto bits_of = [](double key_bits, double value_bits, double key_values, double value_values,
                            double effective) {
      RunBits out;
      out.bits_k = key_values > 0 ? key_bits / key_values : 0;
      out.bits_v = value_values > 0 ? value_bits / value_values : 0;
      const double values = key_values + value_values;
      out.bits_kv = values > 0 ? (key_bits + value_bits) / values : 0;
      out.bits_kv_effective = values > 0 ? effective / values : 0;
      out.compression = out.bits_kv > 0 ? 16.0 / out.bits_kv : 0;
      return out;
    };
    double key_bits = 0, value_bits = 0, key_values = 0, value_values = 0, effective = 0;
    for (int li = 0; li < layers; ++li) {
      const auto at = static_cast<std::size_t>(li);
      result.layer_bits.push_back(bits_of(bits.key_bits[at], bits.value_bits[at], bits.key_values[at],
                                          bits.value_values[at], bits.effective_bits[at]));
      key_bits += bits.key_bits[at];
      value_bits += bits.value_bits[at];
      key_values += bits.key_values[at];
      value_values += bits.value_values[at];
      effective += bits.effective_bits[at];
    }
    result.bits = bits_of(key_bits, value_bits, key_values, value_values, effective);
    results.runs.push_back(std::move(result));
  }
  return results;
}

}  // namespace

SweepResults run_sweep(const SweepPlan& plan, const SweepOptions& options) {
  SweepRunner runner(plan, options);
  return runner.run();
}

}  // namespace tqlab
