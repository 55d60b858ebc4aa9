#include "sweep/sweep_item.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/index.h"
#include "kv/kv_slab.h"
#include "metrics/attention_block.h"

namespace tqlab {
namespace {

// Queries measured together: one sgemm row block (its buffers hold rows x chunk).
constexpr int kQueryBlockRows = 128;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

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

// Row `token` of a tokens x dim matrix.
template <typename T>
T* row_of(T* matrix, int token, int dim) {
  return matrix + static_cast<std::ptrdiff_t>(token) * dim;
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

// One kv head's K, V and its q heads' Q, with non-finite vectors left out or refused.
struct ItemData {
  int tokens = 0;
  std::vector<float> keys, values;
  std::vector<std::vector<float>> queries;  // per q head of the group
  std::vector<std::vector<bool>> query_ok;  // per q head: measured or skipped
  bool compacted = false;                   // tokens were left out
};

class ItemMeter {
 public:
  ItemMeter(const SweepPlan& plan, const RunSeeds& run_seeds, const WorkItem& item)
      : plan_(plan), dump_(*plan.dump), run_seeds_(run_seeds), item_(item),
        shape_(at(dump_.layers(), item.layer_index)), attention_(plan.config.metrics.attention_options) {}

  ItemMeasurement measure() {
    ItemMeasurement result;
    ItemTotals& totals = result.totals;
    totals.done = true;
    Clock::time_point start = Clock::now();
    const ItemData data = read(totals);
    totals.tokens = data.tokens;
    result.seconds.read = seconds_since(start);
    if (data.tokens == 0) return result;

    start = Clock::now();
    quantize(data);
    result.seconds.quantize = seconds_since(start);

    totals.run_seeds.resize(static_cast<std::size_t>(run_seeds_.count()));
    for (int rs = 0; rs < run_seeds_.count(); ++rs)
      add_reconstruction_and_bits(rs, data.tokens, at(totals.run_seeds, rs));
    if (plan_.attention) {
      start = Clock::now();
      result.kl = measure_attention(data, totals);
      result.seconds.attention = seconds_since(start);
    }
    if (plan_.needle) {
      start = Clock::now();
      totals.measured_trials = measure_needles(data, totals);
      result.seconds.needle = seconds_since(start);
    }
    return result;
  }

 private:
  const PlannedRun& run_of(int rs) const { return at(plan_.runs, run_seeds_.run_of(rs)); }
  ExactTokens exact_of(int rs) const { return run_of(rs).exact(attention_.window_mode); }
  int group() const { return shape_.q_heads / shape_.kv_heads; }
  KvSlab slab(Role role, int head) const { return {role, item_.layer_index, item_.seq, head}; }
  const QuantizationSlot& key_slot(int rs) const { return at(slots_, at(key_slot_, rs)); }
  const QuantizationSlot& value_slot(int rs) const { return at(slots_, at(value_slot_, rs)); }

  ItemData read(ItemTotals& totals) const {
    ItemData data;
    data.tokens = shape_.tokens;
    const KvSlab key_slab = slab(Role::key, item_.kv_head), value_slab = slab(Role::value, item_.kv_head);
    read_slab(dump_, key_slab, data.keys);
    read_slab(dump_, value_slab, data.values);
    const int queries = plan_.attention || plan_.needle ? group() : 0;
    for (int g = 0; g < queries; ++g) {
      read_slab(dump_, slab(Role::query, item_.kv_head * group() + g), data.queries.emplace_back());
    }
    const auto refuse = [&](const KvSlab& slab, int dim, const std::vector<float>& x) {
      const auto [token, channel] = first_nonfinite(shape_.tokens, dim, x.data());
      if (token < 0) return;
      fail(
          "'{}': tensor '{}', sequence {}, head {}: non-finite value ({}) at token {}, channel {}; set "
          "data.nonfinite to \"skip\" in the config to leave such vectors out",
          dump_.file().path(), slab_tensor_name(dump_, slab), slab.seq, slab.head,
          row_of(x.data(), token, dim)[channel], token, channel);
    };
    if (plan_.config.data.nonfinite != NonfiniteMode::skip) {
      refuse(key_slab, shape_.key_dim, data.keys);
      refuse(value_slab, shape_.value_dim, data.values);
      for (int g = 0; g < queries; ++g) {
        refuse(slab(Role::query, item_.kv_head * group() + g), shape_.key_dim, at(data.queries, g));
      }
      data.query_ok.assign(static_cast<std::size_t>(queries),
                           std::vector<bool>(static_cast<std::size_t>(shape_.tokens), true));
      return data;
    }
    // Skip: a token whose key or value is not finite leaves the sequence
    // (its query too); a query that is not finite is not measured.
    std::vector<int> kept;
    for (int t = 0; t < shape_.tokens; ++t) {
      const bool key_ok = row_is_finite(shape_.key_dim, row_of(data.keys.data(), t, shape_.key_dim));
      const bool value_ok = row_is_finite(shape_.value_dim, row_of(data.values.data(), t, shape_.value_dim));
      totals.skipped_keys += !key_ok;
      totals.skipped_values += !value_ok;
      if (key_ok && value_ok) kept.push_back(t);
    }
    const auto compact = [&](std::vector<float>& x, int dim) {
      for (int i = 0; i < static_cast<int>(kept.size()); ++i) {
        std::copy_n(row_of(x.data(), at(kept, i), dim), dim, row_of(x.data(), i, dim));
      }
      x.resize(kept.size() * static_cast<std::size_t>(dim));
    };
    data.compacted = static_cast<int>(kept.size()) != shape_.tokens;
    if (data.compacted) {
      compact(data.keys, shape_.key_dim);
      compact(data.values, shape_.value_dim);
      for (std::vector<float>& q : data.queries) compact(q, shape_.key_dim);
      data.tokens = static_cast<int>(kept.size());
    }
    for (std::vector<float>& q : data.queries) {
      std::vector<bool>& ok = data.query_ok.emplace_back(static_cast<std::size_t>(data.tokens), true);
      for (int t = 0; t < data.tokens; ++t) {
        float* row = row_of(q.data(), t, shape_.key_dim);
        if (row_is_finite(shape_.key_dim, row)) continue;
        at(ok, t) = false;
        std::fill(row, row + shape_.key_dim, 0.0f);  // measured by nobody; zeros keep the sgemm finite
        ++totals.skipped_queries;
      }
    }
    return data;
  }

  // Each distinct (role, quantizer, seed) once.
  void quantize(const ItemData& data) {
    const auto slot_for = [&](Role role, int quantizer, int seed_index) {
      for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
        const QuantizationSlot& slot = at(slots_, i);
        if (slot.role == role && slot.quantizer == quantizer && slot.seed_index == seed_index) return i;
      }
      QuantizationSlot& slot = slots_.emplace_back();
      slot.role = role;
      slot.quantizer = quantizer;
      slot.seed_index = seed_index;
      return static_cast<int>(slots_.size()) - 1;
    };
    for (int rs = 0; rs < run_seeds_.count(); ++rs) {
      const PlannedRun& run = run_of(rs);
      const int seed_index = run_seeds_.seed_index_of(rs);
      key_slot_.push_back(slot_for(Role::key, at(at(run.k_quantizer, item_.layer_index), item_.kv_head), seed_index));
      value_slot_.push_back(
          slot_for(Role::value, at(at(run.v_quantizer, item_.layer_index), item_.kv_head), seed_index));
    }
    const bool keep_delta = plan_.attention || plan_.needle;
    std::vector<float> decoded;
    for (QuantizationSlot& slot : slots_) {
      const int dim = slot.role == Role::key ? shape_.key_dim : shape_.value_dim;
      const std::vector<float>& x = slot.role == Role::key ? data.keys : data.values;
      decoded.resize(x.size());
      slot.bytes = fake_quantize_rows(dump_, slab(slot.role, item_.kv_head), *at(plan_.quantizers, slot.quantizer),
                                      at(plan_.config.seeds, slot.seed_index), data.tokens, x.data(), decoded.data());
      slot.errors = reconstruction_sums(data.tokens, dim, x.data(), decoded.data());
      if (keep_delta) {
        slot.delta.resize(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) slot.delta[i] = decoded[i] - x[i];
      }
    }
  }

  void add_reconstruction_and_bits(int rs, int tokens, ItemRunSeedTotals& out) const {
    const QuantizationSlot& key = key_slot(rs);
    const QuantizationSlot& value = value_slot(rs);
    out.reconstruction[kKeyRelMse] = key.errors.rel_mse;
    out.reconstruction[kValueRelMse] = value.errors.rel_mse;
    out.reconstruction[kKeyNmse] = key.errors.nmse;
    out.reconstruction[kValueNmse] = value.errors.nmse;
    out.reconstruction[kKeyCos] = key.errors.cos;
    out.reconstruction[kValueCos] = value.errors.cos;
    out.key_bits = 8.0 * static_cast<double>(key.bytes);
    out.value_bits = 8.0 * static_cast<double>(value.bytes);
    out.key_values = static_cast<double>(tokens) * shape_.key_dim;
    out.value_values = static_cast<double>(tokens) * shape_.value_dim;
    // Exact tokens at 16 bits, the rest at the quantizer's bits per value.
    const double exact_share = static_cast<double>(exact_of(rs).cached_exact_tokens(tokens, attention_.chunk)) / tokens;
    out.effective_bits = (1 - exact_share) * 8.0 * static_cast<double>(key.bytes + value.bytes) +
                         exact_share * 16.0 * (out.key_values + out.value_values);
  }

  // Runs by the key quantization they share, in slot order.
  std::map<int, std::vector<int>> runs_of_key_slot() const {
    std::map<int, std::vector<int>> runs;
    for (int rs = 0; rs < run_seeds_.count(); ++rs) runs[at(key_slot_, rs)].push_back(rs);
    return runs;
  }

  std::vector<std::vector<std::vector<double>>> measure_attention(const ItemData& data, ItemTotals& totals) const {
    const double scale = attention_scale(attention_, shape_.key_dim);
    const int heads = static_cast<int>(data.queries.size());
    std::vector<std::vector<std::vector<double>>> kl(static_cast<std::size_t>(run_seeds_.count()));
    for (int rs = 0; rs < run_seeds_.count(); ++rs) {
      at(totals.run_seeds, rs).attention.assign(static_cast<std::size_t>(heads), AttentionSums{});
      at(kl, rs).resize(static_cast<std::size_t>(heads));
    }
    const std::map<int, std::vector<int>> shared_keys = runs_of_key_slot();
    AttentionBlock block;
    for (int g = 0; g < heads; ++g) {
      const std::vector<float>& q = at(data.queries, g);
      const std::vector<bool>& measured = at(data.query_ok, g);
      for (const ChunkGeometry& chunk : split_chunks(data.tokens, attention_.chunk)) {
        const auto key_at = static_cast<std::size_t>(chunk.start) * shape_.key_dim;
        const auto value_at = static_cast<std::size_t>(chunk.start) * shape_.value_dim;
        for (int first = 0; first < chunk.tokens; first += kQueryBlockRows) {
          const int rows = std::min(kQueryBlockRows, chunk.tokens - first);
          block.set_exact(chunk, first, rows, attention_.causal, scale, shape_.key_dim, shape_.value_dim,
                          row_of(q.data(), chunk.start + first, shape_.key_dim), data.keys.data() + key_at,
                          data.values.data() + value_at);
          for (const auto& [slot, run_seeds] : shared_keys) {
            block.set_key_error(at(slots_, slot).delta.data() + key_at);
            for (int rs : run_seeds) {
              AttentionSums& sums = at(at(totals.run_seeds, rs).attention, g);
              std::vector<double>& values = at(at(kl, rs), g);
              block.compare(exact_of(rs), value_slot(rs).delta.data() + value_at,
                            [&](int row, const QueryAttentionError& error, std::optional<double> output_error) {
                              if (!at(measured, chunk.start + first + row)) return;
                              sums[kKl].add(error.kl);
                              sums[kTop1].add(error.top1 ? 1.0 : 0.0);
                              sums[kTop5].add(error.top5 ? 1.0 : 0.0);
                              sums[kCos].add(error.cosine);
                              if (output_error) sums[kOutErr].add(*output_error);
                              sums[kIpBias].add(error.ip_bias);
                              sums[kIpMeanSquare].add(error.ip_mean_square);
                              values.push_back(error.kl);
                            });
            }
          }
        }
      }
    }
    return kl;
  }

  // Returns the number of trials measured.
  int measure_needles(const ItemData& data, ItemTotals& totals) const {
    const double scale = attention_scale(attention_, shape_.key_dim);
    const int dim = shape_.key_dim;
    const std::vector<double>& margins = plan_.config.metrics.needle_options.margins;
    const KvSlab keys = slab(Role::key, item_.kv_head);
    const std::map<int, std::vector<int>> shared_keys = runs_of_key_slot();
    int measured = 0;
    std::vector<float> planted_keys, decoded(data.keys.size());
    for (const NeedleTrial& pick : plan_.needle_trials) {
      if (pick.layer_index != item_.layer_index || pick.seq != item_.seq || pick.q_head / group() != item_.kv_head) {
        continue;
      }
      // Trials were placed on the full sequence: one that lost tokens is not measured.
      if (data.compacted) continue;
      const float* q = row_of(at(data.queries, pick.q_head % group()).data(), pick.query, dim);
      const int chunk_start = pick.query / attention_.chunk * attention_.chunk;
      const ChunkGeometry chunk{chunk_start, std::min(attention_.chunk, data.tokens - chunk_start)};
      const int query_local = pick.query - chunk.start;
      const int key_local = pick.key - chunk.start;
      const int attended = attended_keys(chunk, attention_.causal, query_local);
      const std::vector<double> exact_logits = needle_logits(dim, attended, chunk, q, data.keys.data(), scale);
      // Nor one whose needle cannot be planted, or would lie far outside the data's
      // range, at some margin (needle.h): a zero query, or one of (nearly) zero norm.
      const float* k_j = row_of(data.keys.data(), pick.key, dim);
      std::vector<PlantedNeedle> needles;
      for (double margin : margins)
        needles.push_back(plant_needle(dim, exact_logits, key_local, q, k_j, scale, margin));
      if (!needles_are_plantable(needles, dim, attended, chunk, data.keys.data())) continue;
      ++measured;
      for (ItemRunSeedTotals& run : totals.run_seeds) run.needle.emplace_back(margins.size());
      // Quantizers whose tokens are independent: the other keys are the item's
      // quantization (k + delta), and only the planted key is quantized again.
      std::map<int, std::vector<double>> unplanted_logits;
      for (const auto& [slot_index, run_seeds] : shared_keys) {
        const QuantizationSlot& slot = at(slots_, slot_index);
        if (!at(plan_.quantizers, slot.quantizer)->encodes_tokens_independently()) continue;
        std::vector<double>& logits = unplanted_logits[slot_index];
        for (int i = 0; i < attended; ++i) {
          const std::size_t row = static_cast<std::size_t>(chunk.start + i) * dim;
          double sum = 0;
          for (int c = 0; c < dim; ++c) sum += static_cast<double>(q[c]) * (data.keys[row + c] + slot.delta[row + c]);
          logits.push_back(scale * sum);
        }
      }
      for (int m = 0; m < static_cast<int>(margins.size()); ++m) {
        const PlantedNeedle& planted = at(needles, m);
        std::vector<double> planted_logits = exact_logits;
        const double planted_logit = needle_logits(dim, 1, ChunkGeometry{0, 1}, q, planted.key.data(), scale)[0];
        at(planted_logits, key_local) = planted_logit;
        for (const auto& [slot_index, run_seeds] : shared_keys) {
          const QuantizationSlot& slot = at(slots_, slot_index);
          const Quantizer& quantizer = *at(plan_.quantizers, slot.quantizer);
          const std::uint64_t seed = at(plan_.config.seeds, slot.seed_index);
          std::vector<double> quantized_logits;
          if (const auto found = unplanted_logits.find(slot_index); found != unplanted_logits.end()) {
            std::vector<float> row(static_cast<std::size_t>(dim));
            (void)fake_quantize_rows(dump_, keys, quantizer, seed, 1, planted.key.data(), row.data());
            quantized_logits = found->second;
            at(quantized_logits, key_local) = needle_logits(dim, 1, ChunkGeometry{0, 1}, q, row.data(), scale)[0];
          } else {
            planted_keys = data.keys;
            std::copy(planted.key.begin(), planted.key.end(), row_of(planted_keys.data(), pick.key, dim));
            (void)fake_quantize_rows(dump_, keys, quantizer, seed, data.tokens, planted_keys.data(), decoded.data());
            quantized_logits = needle_logits(dim, attended, chunk, q, decoded.data(), scale);
          }
          for (int rs : run_seeds) {
            at(at(totals.run_seeds, rs).needle.back(), m) =
                measure_needle(planted_logits, quantized_logits, key_local, planted_logit, planted.exact_weight,
                               exact_of(rs), chunk, query_local);
          }
        }
      }
    }
    return measured;
  }

  const SweepPlan& plan_;
  const KvDump& dump_;
  const RunSeeds& run_seeds_;
  const WorkItem item_;
  const KvLayerShape& shape_;
  const AttentionConfig& attention_;
  std::vector<QuantizationSlot> slots_;
  std::vector<int> key_slot_, value_slot_;  // per (run, seed): index into slots_
};

}  // namespace

ItemMeasurement measure_item(const SweepPlan& plan, const RunSeeds& run_seeds, const WorkItem& item) {
  return ItemMeter(plan, run_seeds, item).measure();
}

std::vector<SyntheticOutcome> measure_synthetic_trial(const SweepPlan& plan, const RunSeeds& run_seeds, int trial) {
  const SyntheticNeedle needle = make_synthetic_needle(trial);
  std::vector<SyntheticOutcome> outcomes(static_cast<std::size_t>(run_seeds.count()));
  // Each distinct (quantizer, seed) once, shared by the runs that use it.
  std::map<std::pair<int, int>, SyntheticOutcome> measured;
  for (int rs = 0; rs < run_seeds.count(); ++rs) {
    const int quantizer = at(plan.runs, run_seeds.run_of(rs)).synthetic_needle_quantizer;
    if (quantizer < 0) continue;
    const std::pair<int, int> key{quantizer, run_seeds.seed_index_of(rs)};
    auto found = measured.find(key);
    if (found == measured.end()) {
      SyntheticOutcome outcome;
      try {
        const auto [weight, error] = measure_synthetic_needle(needle, *at(plan.quantizers, quantizer),
                                                              at(plan.config.seeds, key.second), trial);
        outcome = {true, weight, error};
      } catch (const InputError& error) {
        fail("synthetic needle trial {} with '{}': {}", trial, at(plan.quantizer_specs, quantizer), error.what());
      }
      found = measured.emplace(key, outcome).first;
    }
    at(outcomes, rs) = found->second;
  }
  return outcomes;
}

}  // namespace tqlab
