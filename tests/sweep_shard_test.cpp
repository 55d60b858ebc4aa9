// Shard slicing (sweep/sweep_shard.h): K/N parsed as split -n counts it, every
// unit in exactly one shard, shards contiguous and the same on every call, and
// balanced by estimated cost (within one unit's cost), not by unit count.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io_test_util.h"
#include "job/sweep_shard.h"
#include "sweep_test_util.h"

namespace tqlab {
namespace {

using sweep_test::DumpShape;

nlohmann::json shard_config(bool causal, int synth_trials) {
  return {{"data", {{"path", "dump.safetensors"}}},
          {"grid", {{"k", {"tq:b=3"}}, {"v", {"tq:b=3"}}}},
          {"metrics",
           {{"attention", {{"chunk", 16}, {"causal", causal}}},
            {"needle", {{"trials", 4}, {"synth_trials", synth_trials}}}}}};
}

SweepPlan plan_for(const io_test::ScratchDir& scratch, const nlohmann::json& config) {
  return plan_sweep(parse_sweep_config(config, scratch.file("c.json")));
}

TEST(SweepShardSpec, ParsesKOfNCountingFromOne) {
  EXPECT_EQ(parse_shard_spec("1/4"), (ShardSpec{1, 4}));
  EXPECT_EQ(parse_shard_spec("4/4"), (ShardSpec{4, 4}));
  EXPECT_EQ(parse_shard_spec("1/1"), (ShardSpec{1, 1}));
  EXPECT_EQ(parse_shard_spec("7/12").text(), "7/12");
  for (const char* bad :
       {"0/4", "5/4", "1/0", "a/b", "1/", "/4", "1/4/2", "-1/4", " 1/4", "1/4 ", "14", "", "1/2000000"}) {
    SCOPED_TRACE(bad);
    try {
      parse_shard_spec(bad);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("--shard"), std::string::npos) << error.what();
    }
  }
}

// The cost of one item, derived by hand: 40 tokens in chunks of 16 are chunks of 16, 16 and 8 tokens.
TEST(SweepShardCost, ItemCostIsQueryHeadsTimesAttendedPairsPlusTokens) {
  io_test::ScratchDir scratch;
  sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{2, 1, 2, 4, 40, 16, 8});
  const SweepPlan causal = plan_for(scratch, shard_config(true, 2));
  const WorkUnits units(causal);
  // 2 q heads per kv head; causal pairs 16*17/2 + 16*17/2 + 8*9/2 = 308.
  EXPECT_EQ(unit_cost(causal, units, 0), 2u * 308u + 40u);
  const SweepPlan bidirectional = plan_for(scratch, shard_config(false, 2));
  EXPECT_EQ(unit_cost(bidirectional, WorkUnits(bidirectional), 0), 2u * (256u + 256u + 64u) + 40u);
  ASSERT_EQ(units.kind(units.count() - 1), UnitKind::synthetic_trial);
  EXPECT_EQ(unit_cost(causal, units, units.count() - 1), 4096u * 128u);
}

TEST(SweepShardSlice, EveryUnitInExactlyOneContiguousShardTheSameEachTime) {
  io_test::ScratchDir scratch;
  sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{3, 2, 2, 4, 40, 16, 8});
  const SweepPlan plan = plan_for(scratch, shard_config(true, 3));
  const SweepPlan again = plan_for(scratch, shard_config(true, 3));
  const WorkUnits units(plan);
  ASSERT_EQ(units.count(), 3 * 2 * 2 + 3);
  for (int count = 1; count <= units.count() + 3; ++count) {
    SCOPED_TRACE(count);
    const std::vector<int> shards = assign_shards(plan, units, count);
    EXPECT_EQ(shards, assign_shards(again, WorkUnits(again), count));
    ASSERT_EQ(static_cast<int>(shards.size()), units.count());
    EXPECT_TRUE(std::is_sorted(shards.begin(), shards.end()));
    EXPECT_GE(shards.front(), 1);
    EXPECT_LE(shards.back(), count);
    std::vector<int> seen(static_cast<std::size_t>(units.count()), 0);
    for (int index = 1; index <= count; ++index) {
      for (int unit : shard_units(plan, units, {index, count})) ++seen[static_cast<std::size_t>(unit)];
    }
    EXPECT_EQ(seen, std::vector<int>(static_cast<std::size_t>(units.count()), 1));
  }
}

// Synthetic trials cost as much as many small items: shards get equal cost, not equal counts.
TEST(SweepShardSlice, BalancedByCostWithinOneUnitNotByCount) {
  io_test::ScratchDir scratch;
  sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{4, 2, 2, 4, 64, 16, 8});
  const SweepPlan plan = plan_for(scratch, shard_config(true, 4));
  const WorkUnits units(plan);
  std::uint64_t total = 0, largest = 0;
  for (int unit = 0; unit < units.count(); ++unit) {
    total += unit_cost(plan, units, unit);
    largest = std::max(largest, unit_cost(plan, units, unit));
  }
  bool counts_differ = false;
  for (int count : {2, 3, 4, 5}) {
    SCOPED_TRACE(count);
    std::vector<std::size_t> sizes;
    for (int index = 1; index <= count; ++index) {
      const std::vector<int> held = shard_units(plan, units, {index, count});
      sizes.push_back(held.size());
      std::uint64_t cost = 0;
      for (int unit : held) cost += unit_cost(plan, units, unit);
      const double ideal = static_cast<double>(total) / count;
      EXPECT_LE(std::abs(static_cast<double>(cost) - ideal), static_cast<double>(largest)) << "shard " << index;
    }
    counts_differ = counts_differ ||
                    *std::max_element(sizes.begin(), sizes.end()) > *std::min_element(sizes.begin(), sizes.end()) + 1;
  }
  EXPECT_TRUE(counts_differ) << "every cut gave equal unit counts: the costs played no part";
}

}  // namespace
}  // namespace tqlab
