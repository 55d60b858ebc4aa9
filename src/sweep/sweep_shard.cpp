#include "sweep/sweep_shard.h"

#include <charconv>

#include <fmt/format.h>

#include "core/error.h"
#include "core/index.h"
#include "metrics/attention_geometry.h"
#include "metrics/needle.h"

namespace tqlab {
namespace {

bool parse_count(std::string_view text, int& out) {
  const auto [stop, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && error == std::errc() && stop == text.data() + text.size();
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

std::uint64_t unit_cost(const SweepPlan& plan, const WorkUnits& units, int unit) {
  if (units.kind(unit) == UnitKind::synthetic_trial) {
    return std::uint64_t{kSyntheticNeedleKeys} * std::uint64_t{kSyntheticNeedleDim};
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

std::vector<int> assign_shards(const SweepPlan& plan, const WorkUnits& units, int count) {
  std::vector<std::uint64_t> costs;
  unsigned __int128 total = 0;
  for (int unit = 0; unit < units.count(); ++unit) {
    costs.push_back(unit_cost(plan, units, unit));
    total += costs.back();
  }
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

std::vector<int> shard_units(const SweepPlan& plan, const WorkUnits& units, const ShardSpec& shard) {
  const std::vector<int> shards = assign_shards(plan, units, shard.count);
  std::vector<int> held;
  for (int unit = 0; unit < units.count(); ++unit) {
    if (at(shards, unit) == shard.index) held.push_back(unit);
  }
  return held;
}

}  // namespace tqlab
