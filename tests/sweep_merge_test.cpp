// tqlab merge's core (sweep/sweep_merge.h) on shard documents written as
// `tqlab sweep --shard K/N` writes them (sweep/shard_document.h): the merged
// document is the unsharded one byte for byte outside "timing", for any shard
// count (empty shards included); and missing, duplicated, overlapping and
// foreign shards are each named, all on one line.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "io_test_util.h"
#include "job/shard_document.h"
#include "job/sweep_merge.h"
#include "sweep_test_util.h"

namespace tqlab {
namespace {

using sweep_test::DumpShape;

nlohmann::json merge_config(const nlohmann::json& seeds, int synth_trials = 2) {
  return {{"data", {{"path", "dump.safetensors"}}},
          {"grid", {{"k", {"tq:b=3", "kivi:b=2,group=16"}}, {"v", {"tq:b=2"}}, {"window", {0, 4}}}},
          {"seeds", seeds},
          {"metrics",
           {{"attention", {{"chunk", 16}}},
            {"needle", {{"trials", 12}, {"synth_trials", synth_trials}}},
            {"per_head", true}}}};
}

struct Fixture {
  io_test::ScratchDir scratch;
  Fixture() { sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{3, 2, 2, 4, 40, 16, 8}); }

  // Shard K/N of `config`, written as `tqlab sweep --shard K/N` writes it (without the journal,
  // which its own tests cover); returns its path.
  std::string shard(const nlohmann::json& config, int index, int count, const std::string& name = "") const {
    SweepConfig parsed = parse_sweep_config(config, scratch.file("c.json"));
    parsed.out =
        scratch.file(name.empty() ? "shard-" + std::to_string(index) + "-of-" + std::to_string(count) + ".json" : name);
    const SweepPlan plan = plan_sweep(std::move(parsed));
    const ShardSpec shard{index, count};
    const std::vector<int> held = shard_units(plan, WorkUnits(plan), shard);
    SweepOptions options;
    options.threads = 2;
    options.units = held;
    SweepTiming timing;
    const SweepTotals totals = compute_sweep_totals(plan, options, timing);
    const DataIdentity data{std::filesystem::file_size(plan.config.data.resolved_path), std::string(64, 'd')};
    write_text_file(plan.config.out, shard_document_json(plan, shard, held, totals, data, timing).dump());
    return plan.config.out;
  }

  std::string merged_text(const std::vector<std::string>& shards) const {
    MergedSweep merged = merge_shards(shards, scratch.file("merged.json"));
    sweep_test::SweepRun run{std::move(merged.plan), {}};
    run.results = summarize_sweep(run.plan, merged.totals);
    return sweep_test::results_text(run);
  }

  std::string merge_error(const std::vector<std::string>& shards) const {
    try {
      merge_shards(shards, scratch.file("merged.json"));
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  }
};

TEST(SweepMerge, ShardsMergeToTheUnshardedDocumentForAnyCount) {
  Fixture fixture;
  const nlohmann::json config = merge_config({0, 1});
  SweepConfig parsed = parse_sweep_config(config, fixture.scratch.file("c.json"));
  parsed.out = fixture.scratch.file("merged.json");  // the data path is written relative to the output
  sweep_test::SweepRun whole{plan_sweep(std::move(parsed)), {}};
  whole.results = run_sweep(whole.plan, SweepOptions{});
  const std::string expected = sweep_test::results_text(whole);
  const int units = WorkUnits(whole.plan).count();
  for (int count : {1, 3, units + 2}) {  // units + 2: some shards are empty
    SCOPED_TRACE(count);
    std::vector<std::string> shards;
    for (int index = count; index >= 1; --index) shards.push_back(fixture.shard(config, index, count));
    EXPECT_EQ(fixture.merged_text(shards), expected);
  }
}

TEST(SweepMerge, NamesMissingDuplicatedOverlappingAndForeignShards) {
  Fixture fixture;
  const nlohmann::json config = merge_config({0}, 0);  // items only: every shard holds some
  const std::string a = fixture.shard(config, 1, 3), b = fixture.shard(config, 2, 3), c = fixture.shard(config, 3, 3);
  const std::string missing = fixture.merge_error({a, c});
  EXPECT_NE(missing.find("shard 2/3 is missing (units "), std::string::npos) << missing;

  std::filesystem::copy_file(b, fixture.scratch.file("copy-of-2.json"));
  const std::string duplicated = fixture.merge_error({a, b, fixture.scratch.file("copy-of-2.json"), c});
  EXPECT_NE(duplicated.find("are duplicates: both are shard 2/3"), std::string::npos) << duplicated;
  const std::string twice = fixture.merge_error({a, b, b, c});
  EXPECT_NE(twice.find("is given twice"), std::string::npos) << twice;

  const std::string half = fixture.shard(config, 1, 2);
  const std::string overlapping = fixture.merge_error({half, a, b, c});
  EXPECT_NE(overlapping.find("overlap: both hold units"), std::string::npos) << overlapping;

  const std::string other = fixture.shard(merge_config({7}, 0), 2, 3, "other-seed.json");
  const std::string foreign = fixture.merge_error({a, other, c});
  EXPECT_NE(foreign.find("other-seed.json' (2/3) is foreign: another config"), std::string::npos) << foreign;
  EXPECT_NE(foreign.find("shard 2/3 is missing"), std::string::npos) << foreign;
  EXPECT_NE(foreign.find("2 problems"), std::string::npos) << foreign;
  EXPECT_EQ(foreign.find('\n'), std::string::npos);
  EXPECT_EQ(fixture.merge_error({a, b, c}), "no error");
}

// A shard whose parts do not add up is refused, not merged into wrong numbers.
TEST(SweepMerge, RefusesAShardWhoseTailsOrUnitsDoNotFit) {
  Fixture fixture;
  const nlohmann::json config = merge_config({0});
  const std::string a = fixture.shard(config, 1, 2), b = fixture.shard(config, 2, 2);
  const auto edited = [&](const std::string& path, const auto& edit) {
    nlohmann::ordered_json document = nlohmann::ordered_json::parse(std::ifstream(path));
    edit(document);
    const std::string out = fixture.scratch.file("edited.json");
    std::ofstream(out) << document.dump();
    return out;
  };
  const std::string short_tail = edited(a, [](nlohmann::ordered_json& d) { d["kl_tails"][0]["all"][1].erase(0); });
  EXPECT_NE(fixture.merge_error({short_tail, b}).find("kl_tails.all: keeps"), std::string::npos);
  const std::string wrong_units = edited(a, [](nlohmann::ordered_json& d) { d["units"].erase(0); });
  EXPECT_NE(fixture.merge_error({wrong_units, b}).find("\"work.holds\""), std::string::npos);
  const std::string fewer_seeds = edited(a, [](nlohmann::ordered_json& d) { d["units"][0]["run_seeds"].erase(0); });
  EXPECT_NE(fixture.merge_error({fewer_seeds, b}).find("(run, seed) pairs"), std::string::npos);
}

}  // namespace
}  // namespace tqlab
