#include "job/sweep_shard.h"

#include <algorithm>
#include <charconv>
#include <climits>

#include <fmt/format.h>

#include "core/decimal.h"
#include "core/error.h"
#include "core/index.h"
#include "metrics/attention_geometry.h"
#include "metrics/needle.h"

namespace tqlab {
namespace {

bool parse_count(std::string_view text, int& out) {
  const std::optional<std::int64_t> value = decimal_integer(text, INT_MIN, INT_MAX);
  if (value) out = static_cast<int>(*value);
  return value.has_value();
}

}  // namespace

std::string ShardSpec::text() const { return fmt::format("{}/{}", index, count); }

ShardSpec parse_shard_spec(std::string_view text) {
  const std::size_t slash = text.find('/');
  ShardSpec shard;
  if (slash == std::string_view::npos || !parse_count(text.substr(0, slash), shard.index) ||
      !parse_count(text.substr(slash + 1), shard.count)) {
    fail("--shard '{}': expected K/N, e.g. 1/4 (shard K of N, K from 1 to N)", text);
  }
  if (shard.count < 1 || shard.count > kMaxShards) {
    fail("--shard '{}': the shard count {} must be between 1 and {}", text, shard.count, kMaxShards);
  }
  if (shard.index < 1 || shard.index > shard.count) {
    fail("--shard '{}': K counts from 1 to N (as split -n K/N does), so K must be between 1 and {}", text, shard.count);
  }
  return shard;
}

namespace {

// A model unit in the items' currency: one chunk's forward (and its output
// layer on the scored tokens, twice for a run: its own and the base's logits)
// in multiply-adds, over the multiply-adds an item spends per attended pair of
// a q head (a dot product and an axpy of head_dim, for the exact attention and
// each (run, seed)'s).
std::uint64_t model_unit_cost(const SweepPlan& plan, const WorkUnits& units, int unit) {
  const ModelConfig& config = plan.model->source->config();
  const auto ctx = static_cast<std::uint64_t>(plan.model->options.ctx);
  const auto hidden = static_cast<std::uint64_t>(config.hidden_size);
  const auto head_dim = static_cast<std::uint64_t>(config.head_dim);
  const auto q_heads = static_cast<std::uint64_t>(config.q_heads);
  const std::uint64_t per_token_layer =
      hidden * (q_heads + 2 * static_cast<std::uint64_t>(config.kv_heads)) * head_dim + q_heads * head_dim * hidden +
      3 * hidden * static_cast<std::uint64_t>(config.intermediate_size);
  const std::uint64_t attention = q_heads * head_dim * ctx * (ctx + 1);  // causal: scores and the weighted sum
  const std::uint64_t logits = (units.kind(unit) == UnitKind::model_run ? 2 : 1) * ctx / 2 * hidden *
                               static_cast<std::uint64_t>(config.vocab_size);
  const std::uint64_t multiply_adds =
      static_cast<std::uint64_t>(config.layers) * (ctx * per_token_layer + attention) + logits;
  const std::uint64_t per_pair = 2 * head_dim * (1 + static_cast<std::uint64_t>(units.run_seeds().count()));
  return std::max<std::uint64_t>(1, multiply_adds / per_pair);
}

}  // namespace

std::uint64_t unit_cost(const SweepPlan& plan, const WorkUnits& units, int unit) {
  switch (units.kind(unit)) {
    case UnitKind::synthetic_trial:
      return std::uint64_t{kSyntheticNeedleKeys} * std::uint64_t{kSyntheticNeedleDim};
    case UnitKind::model_base:
    case UnitKind::model_run:
      return model_unit_cost(plan, units, unit);
    case UnitKind::item:
      break;
  }
  const KvLayerShape& shape = at(plan.dump->layers(), units.items().item(unit).layer_index);
  const AttentionConfig& attention = plan.config.metrics.attention_options;
  std::uint64_t pairs = 0;
  if (plan.attention) {
    for (const ChunkGeometry& chunk : split_chunks(shape.tokens, attention.chunk)) {
      const auto n = static_cast<std::uint64_t>(chunk.tokens);
      pairs += attention.causal ? n * (n + 1) / 2 : n * n;
    }
  }
  return static_cast<std::uint64_t>(units.group(unit)) * pairs + static_cast<std::uint64_t>(shape.tokens);
}

std::vector<int> assign_shards_by_cost(const std::vector<std::uint64_t>& costs, int count) {
  unsigned __int128 total = 0;
  for (const std::uint64_t cost : costs) total += cost;
  std::vector<int> shards;
  unsigned __int128 before = 0;
  for (const std::uint64_t cost : costs) {
    // Integer arithmetic: the same cut on every machine.
    const unsigned __int128 midpoint_times_n = static_cast<unsigned __int128>(count) * (2 * before + cost);
    const auto shard = total == 0 ? 0 : static_cast<int>(midpoint_times_n / (2 * total));
    shards.push_back(std::min(shard, count - 1) + 1);
    before += cost;
  }
  return shards;
}

std::vector<int> assign_shards(const SweepPlan& plan, const WorkUnits& units, int count) {
  std::vector<std::uint64_t> costs;
  for (int unit = 0; unit < units.count(); ++unit) costs.push_back(unit_cost(plan, units, unit));
  return assign_shards_by_cost(costs, count);
}

std::vector<int> shard_units(const SweepPlan& plan, const WorkUnits& units, const ShardSpec& shard) {
  const std::vector<int> shards = assign_shards(plan, units, shard.count);
  std::vector<int> held;
  for (int unit = 0; unit < units.count(); ++unit) {
    if (at(shards, unit) == shard.index) held.push_back(unit);
  }
  return held;
}

}  // namespace tqlab
