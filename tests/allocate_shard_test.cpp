// Profile shards (allocate/profile_work.h, allocate/profile_shard.h): the work units fill every
// cell of a profile exactly once, the offline runs are the distinct (k, v) pairs, a model pass
// costs less the later its unit's layer, the cut into N is contiguous and complete for every N,
// and shards written as `tqlab allocate --shard K/N` writes them merge into the whole profile
// exactly (empty shards included), while a missing, overlapping or foreign shard, or two shards
// that disagree on a candidate's bytes, are named.
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "allocate/profile_cache.h"
#include "allocate/profile_json.h"
#include "allocate/profile_shard.h"
#include "allocate/profile_work.h"
#include "core/atomic_file.h"
#include "model/model_config.h"
#include "model_test_util.h"
#include "test_support.h"

namespace tqlab {
namespace {

const std::vector<std::string> kCandidates{"tq:b=2,nc", "tq:b=4,nc", "fp32"};

// A whole profile of `kind` with random cells: 3 layers x 2 kv heads, 2 seeds.
Profile random_profile(ProfileKind kind, std::mt19937_64& rng) {
  Profile profile;
  profile.kind = kind;
  profile.granularity = Granularity::layer_head;
  profile.candidates = kCandidates;
  profile.seeds = {0, 7};
  profile.content_key = std::string(64, kind == ProfileKind::offline ? 'o' : 'm');
  profile.source = R"({"kind":"test"})";
  std::vector<LayerHeads> layers;
  for (int layer = 0; layer < 3; ++layer) {
    layers.push_back({layer, 2});
    profile.layers.push_back(layer);
  }
  std::uniform_real_distribution<double> value(0.0, 1.0);
  for (const AllocationUnit& unit : allocation_units(layers, Granularity::layer_head)) {
    UnitProfile& entry = profile.units.emplace_back();
    entry.unit = unit;
    entry.values = 64 * 40;
    for (std::size_t c = 0; c < kCandidates.size(); ++c) {
      UnitMeasurement& measured = entry.candidates.emplace_back();
      measured.bytes = 100 * (c + 1) + static_cast<std::uint64_t>(unit.layer);
      for (std::size_t k = 0; k < profile_components(kind).size(); ++k) {
        measured.components.push_back({value(rng), value(rng)});
      }
    }
  }
  if (kind == ProfileKind::model) profile.layers_computed_share = 1.0;
  return profile;
}

// Shard `shard` of `whole` as the measurement of its work units alone would give it: the cells it
// does not hold zero, and so the values and bytes of units and candidates it measures none of.
ProfileShard shard_of(const Profile& whole, const std::vector<std::uint64_t>& costs, const ShardSpec& shard) {
  ProfileShard out;
  out.shard = shard;
  out.costs = costs;
  out.held = profile_shard_units(costs, shard);
  out.profile = whole;
  for (UnitProfile& unit : out.profile.units) {
    unit.values = 0;
    for (UnitMeasurement& measured : unit.candidates) {
      measured.bytes = 0;
      for (auto& per_seed : measured.components) std::fill(per_seed.begin(), per_seed.end(), 0.0);
    }
  }
  for (int work : out.held) {
    for (const ProfileCell& cell : profile_work_cells(whole, work)) {
      const UnitProfile& from = whole.units[static_cast<std::size_t>(cell.unit)];
      UnitProfile& to = out.profile.units[static_cast<std::size_t>(cell.unit)];
      to.values = from.values;
      const auto c = static_cast<std::size_t>(cell.candidate);
      to.candidates[c].bytes = from.candidates[c].bytes;
      for (std::size_t k = 0; k < from.candidates[c].components.size(); ++k) {
        to.candidates[c].components[k][static_cast<std::size_t>(cell.seed)] =
            from.candidates[c].components[k][static_cast<std::size_t>(cell.seed)];
      }
    }
  }
  if (whole.kind == ProfileKind::model) out.layers_computed = 2 * out.held.size();
  out.profile.seconds = 0.5;
  return out;
}

std::string write_shard(const std::string& folder, const ProfileShard& shard, const std::string& name = "") {
  const std::string path =
      folder + "/" + (name.empty() ? "shard-" + std::to_string(shard.shard.index) + ".json" : name);
  write_text_file(path, profile_shard_json(shard).dump(1));
  return path;
}

ModelConfig four_layer_model() {
  ModelConfig model;
  model.layers = 4;
  model.hidden_size = 64;
  model.head_dim = 16;
  model.q_heads = 4;
  model.kv_heads = 2;
  model.intermediate_size = 128;
  model.vocab_size = 256;
  return model;
}

TEST(ProfileWorkTest, OfflineRunsAreTheDistinctPairs) {
  const OfflineRuns runs = offline_profile_runs({"tq:b=3,nc", "fp32", "tq:b=2,nc"});
  ASSERT_EQ(runs.runs.size(), 5u);  // fp32 keys with exact values is fp32 values with exact keys
  EXPECT_EQ(runs.runs[0], (std::pair<std::string, std::string>{"tq:b=3,nc", "fp32"}));
  EXPECT_EQ(runs.runs[1], (std::pair<std::string, std::string>{"fp32", "tq:b=3,nc"}));
  EXPECT_EQ(runs.key_run, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(runs.value_run, (std::vector<int>{1, 2, 4}));
}

TEST(ProfileWorkTest, WorkUnitsFillEveryCellOnce) {
  std::mt19937_64 rng(1);
  for (ProfileKind kind : {ProfileKind::offline, ProfileKind::model}) {
    const Profile profile = random_profile(kind, rng);
    std::vector<int> filled(profile.units.size() * kCandidates.size() * profile.seeds.size(), 0);
    for (int work = 0; work < profile_work_count(profile); ++work) {
      for (const ProfileCell& cell : profile_work_cells(profile, work)) {
        ++filled.at((static_cast<std::size_t>(cell.unit) * kCandidates.size() + cell.candidate) * 2 + cell.seed);
      }
      EXPECT_FALSE(describe_profile_work(profile, work).empty());
    }
    EXPECT_EQ(std::count(filled.begin(), filled.end(), 1), static_cast<long>(filled.size())) << profile_kind_name(kind);
  }
  EXPECT_EQ(profile_work_count(random_profile(ProfileKind::model, rng)), 12 * 3 * 2);
  EXPECT_EQ(profile_work_count(random_profile(ProfileKind::offline, rng)), 5);
}

TEST(ProfileWorkTest, AModelPassCostsLessTheLaterItsLayer) {
  std::mt19937_64 rng(2);
  const Profile profile = random_profile(ProfileKind::model, rng);
  const std::vector<std::uint64_t> costs = model_work_costs(profile, four_layer_model(), 32, 3);
  ASSERT_EQ(costs.size(), 72u);
  const std::size_t per_unit = kCandidates.size() * 2;
  for (std::size_t work = 0; work < costs.size(); ++work) {
    const int layer = profile.units[work / per_unit].unit.layer;
    EXPECT_EQ(costs[work], costs[layer * 4 * per_unit]) << work;  // 4 units (2 heads x K, V) a layer
    if (layer > 0) {
      EXPECT_LT(costs[work], costs[(layer - 1) * 4 * per_unit]) << work;
    }
  }
}

TEST(ProfileWorkTest, TheCutIsContiguousAndComplete) {
  const std::vector<std::uint64_t> costs{5, 1, 1, 9, 2, 2, 2, 7, 1, 3, 3};
  for (int count = 1; count <= 14; ++count) {
    std::vector<int> seen;
    for (int index = 1; index <= count; ++index) {
      const std::vector<int> held = profile_shard_units(costs, {index, count});
      for (std::size_t i = 1; i < held.size(); ++i) EXPECT_EQ(held[i], held[i - 1] + 1);
      if (!held.empty() && !seen.empty()) {
        EXPECT_EQ(held.front(), seen.back() + 1);
      }
      seen.insert(seen.end(), held.begin(), held.end());
    }
    EXPECT_EQ(seen.size(), costs.size()) << count;
  }
}

TEST(ProfileShardTest, ShardsMergeIntoTheWholeProfile) {
  std::mt19937_64 rng(3);
  const std::string folder = testing::scratch_folder("profile_shards");
  for (ProfileKind kind : {ProfileKind::offline, ProfileKind::model}) {
    const Profile whole = random_profile(kind, rng);
    const std::vector<std::uint64_t> costs =
        kind == ProfileKind::model ? model_work_costs(whole, four_layer_model(), 32, 3) : offline_work_costs(whole);
    for (int count : {1, 2, 3, 7, 9}) {  // 9 > 5 offline runs: empty shards
      std::vector<std::string> paths;
      for (int index = 1; index <= count; ++index) {
        paths.push_back(write_shard(folder, shard_of(whole, costs, {index, count}),
                                    fmt::format("{}-{}-{}.json", profile_kind_name(kind), index, count)));
      }
      const Profile merged = merge_profile_shards(paths);
      EXPECT_EQ(profile_json(merged, nullptr)["units"], profile_json(whole, nullptr)["units"])
          << profile_kind_name(kind) << " in " << count;
      EXPECT_EQ(merged.content_key, whole.content_key);
      EXPECT_DOUBLE_EQ(merged.seconds, 0.5 * count);
      if (kind == ProfileKind::model) {
        EXPECT_DOUBLE_EQ(*merged.layers_computed_share, 2.0 / 3.0);
      }
    }
  }
}

TEST(ProfileShardTest, ProblemsAreNamed) {
  std::mt19937_64 rng(4);
  const std::string folder = testing::scratch_folder("profile_shard_problems");
  const Profile whole = random_profile(ProfileKind::model, rng);
  const std::vector<std::uint64_t> costs = model_work_costs(whole, four_layer_model(), 32, 3);
  const std::string one = write_shard(folder, shard_of(whole, costs, {1, 3}));
  const std::string two = write_shard(folder, shard_of(whole, costs, {2, 3}));
  const std::string three = write_shard(folder, shard_of(whole, costs, {3, 3}));
  const std::string half = write_shard(folder, shard_of(whole, costs, {1, 2}), "half.json");
  const auto message = [](const std::vector<std::string>& paths) {
    return testing::input_error_message([&] { (void)merge_profile_shards(paths); });
  };
  EXPECT_NE(message({one, three}).find("shard 2/3 is missing"), std::string::npos) << message({one, three});
  EXPECT_NE(message({one, two, three, half}).find("overlap"), std::string::npos);
  EXPECT_NE(message({one, two, three, one}).find("given twice"), std::string::npos);

  Profile other = whole;
  other.content_key = std::string(64, 'x');
  const std::string foreign = write_shard(folder, shard_of(other, costs, {2, 3}), "foreign.json");
  const std::string text = message({one, foreign, three});
  EXPECT_NE(text.find("foreign.json' (2/3) is foreign: another profile (content key"), std::string::npos) << text;

  ProfileShard bytes = shard_of(whole, costs, {2, 3});
  ProfileShard bytes_one = shard_of(whole, costs, {1, 3});
  // Shards 1/3 and 2/3 both measure a candidate of the unit where they meet; make them disagree.
  const ProfileCell last_of_one = profile_work_cells(whole, bytes_one.held.back()).back();
  const ProfileCell first_of_two = profile_work_cells(whole, bytes.held.front()).front();
  ASSERT_EQ(last_of_one.unit, first_of_two.unit);
  ASSERT_EQ(last_of_one.candidate, first_of_two.candidate);
  bytes.profile.units[first_of_two.unit].candidates[first_of_two.candidate].bytes += 1;
  const std::string disagreeing = write_shard(folder, bytes, "bytes.json");
  EXPECT_NE(message({one, disagreeing, three}).find("disagree on the bytes"), std::string::npos);

  EXPECT_TRUE(is_profile_shard_file(one));
  write_cached_profile(folder + "/whole.json", whole);
  EXPECT_FALSE(is_profile_shard_file(folder + "/whole.json"));
  EXPECT_NE(message({folder + "/whole.json"}).find("a whole profile"), std::string::npos);
}

}  // namespace
}  // namespace tqlab
