// An engine's plan for any choice it can express (engine_plan_of), and the plan --verify tells the
// engine to run: the least measured among the profile's best and the rows at the same bits it can run
// (allocate/measured_pick.h).
#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "allocate/allocation.h"
#include "allocate/engine_shapes.h"
#include "allocate/measured_pick.h"
#include "allocate/same_bits.h"
#include "allocate/verify.h"
#include "allocate_test_util.h"

namespace tqlab {
namespace {

const std::vector<std::string> kCandidates{"tq:b=2,nc", "tq:b=3,nc", "tq:b=4,nc", "fp16"};
const std::vector<std::string> kTrtllmTypes{"nvfp4", "fp8_e4m3", "bf16", "fp16"};  // TensorRT-LLM's, one per candidate

// The choice giving layer position i's keys keys[i] and its values values[i], every head alike.
std::vector<int> layered_choice(const Profile& profile, const std::vector<int>& keys, const std::vector<int>& values) {
  std::vector<int> choice;
  for (const UnitProfile& unit : profile.units) {
    const auto at = static_cast<std::size_t>(std::find(profile.layers.begin(), profile.layers.end(), unit.unit.layer) -
                                             profile.layers.begin());
    choice.push_back(unit.unit.role == Role::key ? keys[at] : values[at]);
  }
  return choice;
}

// Every engine's own best plan, given back to engine_plan_of as a choice, is the same plan: its choice,
// its damage and (where the shape spells a plan one way) its flags.
TEST(EnginePlanOfTest, TheSolversBestPlanIsExpressedAsItself) {
  std::mt19937_64 rng(4501);
  const std::vector<std::pair<std::string, std::vector<std::string>>> engines{
      {"llama.cpp", {"q4_0", "q5_0", "q8_0", "f16"}},
      {"ik_llama.cpp", {"q4_0", "q5_0", "q8_0", "f16"}},
      {"trtllm", {"nvfp4", "fp8_e4m3", "bf16", "fp16"}}};
  for (int instance = 0; instance < 12; ++instance) {
    const Profile profile = random_profile(rng, 2 + instance % 7, kCandidates);
    for (const char* given : {"3", "4.2", "6"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      for (const auto& engine_types : engines) {
        const std::string& engine_name = engine_types.first;
        const std::vector<std::string>& names = engine_types.second;
        const EngineAllocation engine = allocate_for_engine(profile, Objective{}, budget, engine_name, names);
        ASSERT_TRUE(engine.best.has_value());
        const EnginePlan& best = engine.plans[*engine.best];
        const std::optional<EnginePlan> again =
            engine_plan_of(profile, Objective{}, engine_name, names, best.scored.choice);
        ASSERT_TRUE(again.has_value()) << engine_name << " at " << given;
        EXPECT_EQ(again->scored.choice, best.scored.choice);
        EXPECT_DOUBLE_EQ(again->scored.damage, best.scored.damage);
        // ik_llama.cpp may spell one plan two ways (two runs: "first N" or "last M"); the others one.
        if (engine_name != "ik_llama.cpp") {
          EXPECT_EQ(engine_invocation(engine_name, *again), engine.invocation) << engine_name << " at " << given;
        }
      }
    }
  }
}

// What each shape cannot hold is refused: heads of a role that differ, llama.cpp's layers that differ,
// four runs of types for ik_llama.cpp, keys and values that differ for TensorRT-LLM.
TEST(EnginePlanOfTest, ChoicesOutsideTheShapeHaveNoPlan) {
  std::mt19937_64 rng(4502);
  const Profile profile = random_profile(rng, 5, kCandidates);
  const std::vector<std::string> ggml{"q4_0", "q5_0", "q8_0", "f16"}, trtllm{"nvfp4", "fp8_e4m3", "bf16", "fp16"};
  const auto plan = [&](const std::string& engine, const std::vector<int>& k, const std::vector<int>& v) {
    return engine_plan_of(profile, Objective{}, engine, engine == "trtllm" ? trtllm : ggml,
                          layered_choice(profile, k, v));
  };
  const std::vector<int> flat{1, 1, 1, 1, 1}, ends{2, 1, 1, 1, 3}, four_runs{0, 1, 0, 1, 1};
  ASSERT_TRUE(plan("llama.cpp", flat, std::vector<int>(5, 2)).has_value());
  EXPECT_EQ(plan("llama.cpp", flat, std::vector<int>(5, 2))->scored.name, "llama.cpp -ctk q5_0 -ctv q8_0");
  EXPECT_FALSE(plan("llama.cpp", ends, flat).has_value());
  const std::optional<EnginePlan> ranges = plan("ik_llama.cpp", ends, flat);
  ASSERT_TRUE(ranges.has_value());
  EXPECT_EQ(engine_invocation("ik_llama.cpp", *ranges), "-ctk q5_0 -ctk-first q8_0,1 -ctk-last f16,1 -ctv q5_0");
  EXPECT_EQ(engine_invocation("ik_llama.cpp", *plan("ik_llama.cpp", flat, std::vector<int>{1, 1, 1, 0, 0})),
            "-ctk q5_0 -ctv q5_0 -ctv-last q4_0,2");
  EXPECT_FALSE(plan("ik_llama.cpp", four_runs, flat).has_value());
  const std::optional<EnginePlan> tied = plan("trtllm", ends, ends);
  ASSERT_TRUE(tied.has_value());
  EXPECT_EQ(tied->layer_ranges, "0:bfloat16,1-3:fp8,4:float16");
  EXPECT_FALSE(plan("trtllm", ends, flat).has_value());
  std::vector<int> split_heads = layered_choice(profile, flat, flat);
  split_heads[0] = 2;  // L0.h0.K differs from L0.h1.K
  EXPECT_FALSE(engine_plan_of(profile, Objective{}, "llama.cpp", ggml, split_heads).has_value());
}

// vLLM: the fp16 layers are kept; the others take one preset's formats; a preset whose own boundary
// layers are not all kept cannot run it.
TEST(EnginePlanOfTest, VllmKeepsTheFp16LayersAndNamesThePreset) {
  std::mt19937_64 rng(4503);
  const std::vector<std::string> specs{"vllm_fp8", "vllm_tq_key:b=3,nc", "vllm_uniform:b=3", "fp16"};
  const Profile profile = random_profile(rng, 6, specs);
  const auto plan = [&](const std::vector<int>& k, const std::vector<int>& v) {
    return engine_plan_of(profile, Objective{}, "vllm", specs, layered_choice(profile, k, v));
  };
  const std::optional<EnginePlan> fp8 = plan({0, 0, 3, 0, 0, 0}, {0, 0, 3, 0, 0, 0});
  ASSERT_TRUE(fp8.has_value());
  EXPECT_EQ(fp8->preset, "fp8");
  EXPECT_EQ(fp8->skip_layers, std::vector<int>{2});
  EXPECT_EQ(engine_invocation("vllm", *fp8), "--kv-cache-dtype fp8 --kv-cache-dtype-skip-layers 2");
  const std::optional<EnginePlan> turbo = plan({3, 3, 1, 1, 3, 3}, {3, 3, 2, 2, 3, 3});
  ASSERT_TRUE(turbo.has_value());
  EXPECT_EQ(turbo->preset, "turboquant_3bit_nc");
  EXPECT_TRUE(turbo->skip_layers.empty());
  EXPECT_FALSE(plan({1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2}).has_value());  // its first and last 2 layers quantized
  EXPECT_FALSE(plan({0, 0, 0, 0, 0, 0}, {2, 2, 2, 2, 2, 2}).has_value());  // no preset has these formats
}

// A verification that measured each named choice `metric` = value.
Verification measured_as(const std::vector<std::pair<std::string, double>>& values) {
  Verification verification;
  for (const auto& [name, value] : values) {
    VerifiedRun& run = verification.runs.emplace_back();
    run.names.push_back(name);
    MetricSummary summary;
    summary.mean = value;
    run.metrics.emplace_back("e2e_kld", summary);
  }
  return verification;
}

struct PickFixture {
  Profile profile;
  EngineAllocation engine;
  SameBits same;
};

PickFixture trtllm_fixture() {
  std::mt19937_64 rng(13695);
  PickFixture fixture;
  fixture.profile = random_profile(rng, 4, kCandidates);
  const Budget budget = resolve_budget(fixture.profile, "3.5", "--budget");
  const AllocationResult result = allocate_bits(fixture.profile, Objective{}, budget);
  fixture.engine = allocate_for_engine(fixture.profile, Objective{}, budget, "trtllm", kTrtllmTypes);
  const std::vector<std::string> names = engine_type_names("trtllm", kTrtllmTypes);
  fixture.same = same_bits_rows(fixture.profile, fixture.profile, result, fixture.engine, names);
  add_contenders(fixture.engine, fixture.same, fixture.profile, Objective{}, kTrtllmTypes);
  return fixture;
}

// The contenders are the profile's best (first) and every row within the budget the engine can run:
// for TensorRT-LLM uniform and the rules, each found by its choice.
TEST(MeasuredPickTest, ContendersAreTheBestAndTheRowsTheEngineCanRun) {
  const PickFixture fixture = trtllm_fixture();
  ASSERT_GE(fixture.engine.contenders.size(), 2U);
  EXPECT_EQ(fixture.engine.contenders.front(), *fixture.engine.best);
  for (const SameBitsRow& row : fixture.same.rows) {
    if (row.kind == "engine" || !row.fits) continue;
    const bool runnable =
        engine_plan_of(fixture.profile, Objective{}, "trtllm", kTrtllmTypes, row.scored.choice).has_value();
    const bool contends =
        std::any_of(fixture.engine.contenders.begin(), fixture.engine.contenders.end(),
                    [&](std::size_t i) { return fixture.engine.plans[i].scored.choice == row.scored.choice; });
    EXPECT_EQ(contends, runnable) << row.label;
    EXPECT_TRUE(row.kind != "uniform" || contends);
  }
}

// A contender that measures less than the profile's best becomes the plan the engine runs: its flags,
// the engine row of the rows at the same bits, the profile's pick kept as a "predicted" row.
TEST(MeasuredPickTest, TheLeastMeasuredContenderIsTheEnginesPlan) {
  PickFixture fixture = trtllm_fixture();
  EngineAllocation& engine = fixture.engine;
  const std::size_t profile_best = *engine.best, other = engine.contenders.back();
  ASSERT_NE(profile_best, other);
  std::vector<std::pair<std::string, double>> values;
  for (const std::size_t index : engine.contenders) {
    values.emplace_back(engine.plans[index].scored.name, index == other ? 0.5 : 1.0);
  }
  pick_measured_best(engine, fixture.same, fixture.profile, Objective{}, measured_as(values), "e2e_kld");
  ASSERT_TRUE(engine.profile_best.has_value());
  EXPECT_EQ(*engine.profile_best, profile_best);
  EXPECT_EQ(*engine.best, other);
  EXPECT_EQ(engine.invocation, engine_invocation("trtllm", engine.plans[other]));
  const auto row = std::find_if(fixture.same.rows.begin(), fixture.same.rows.end(),
                                [](const SameBitsRow& entry) { return entry.kind == "engine"; });
  ASSERT_NE(row, fixture.same.rows.end());
  EXPECT_EQ(row->scored.choice, engine.plans[other].scored.choice);
  ASSERT_NE(row + 1, fixture.same.rows.end());
  EXPECT_EQ((row + 1)->kind, "predicted");
  EXPECT_EQ((row + 1)->scored.choice, engine.plans[profile_best].scored.choice);
  ASSERT_TRUE(fixture.same.engine_on_other.has_value());
  EXPECT_DOUBLE_EQ(fixture.same.engine_on_other->damage, row->scored.damage);  // "other" is the same profile here
}

// The profile's best stays when it measures least (ties included) or when a contender went unmeasured.
TEST(MeasuredPickTest, TheProfilesBestStaysUnlessAContenderMeasuresLess) {
  for (const double rival : {1.0, 2.0}) {
    PickFixture fixture = trtllm_fixture();
    std::vector<std::pair<std::string, double>> values;
    for (const std::size_t index : fixture.engine.contenders) {
      values.emplace_back(fixture.engine.plans[index].scored.name, index == *fixture.engine.best ? 1.0 : rival);
    }
    const std::size_t best = *fixture.engine.best;
    const std::size_t rows = fixture.same.rows.size();
    pick_measured_best(fixture.engine, fixture.same, fixture.profile, Objective{}, measured_as(values), "e2e_kld");
    EXPECT_EQ(*fixture.engine.best, best);
    EXPECT_FALSE(fixture.engine.profile_best.has_value());
    EXPECT_EQ(fixture.same.rows.size(), rows);
  }
  PickFixture fixture = trtllm_fixture();
  const std::size_t best = *fixture.engine.best;
  pick_measured_best(fixture.engine, fixture.same, fixture.profile, Objective{},
                     measured_as({{fixture.engine.plans.back().scored.name, 0.1}}), "e2e_kld");
  EXPECT_EQ(*fixture.engine.best, best);
}

// llama.cpp, which tqlab runs itself, is picked by its runs under the engine (one per contender), not
// by the same plans in tqlab's semantics; the chosen one's run is then named "llama.cpp itself".
TEST(MeasuredPickTest, AnEngineTqlabRunsIsPickedByItsOwnRuns) {
  std::mt19937_64 rng(21385);
  const Profile profile = random_profile(rng, 4, kCandidates);
  const std::vector<std::string> types{"q4_0", "q5_0", "q8_0", "f16"};
  const Budget budget = resolve_budget(profile, "5", "--budget");
  const AllocationResult result = allocate_bits(profile, Objective{}, budget);
  EngineAllocation engine = allocate_for_engine(profile, Objective{}, budget, "llama.cpp", types);
  SameBits same = same_bits_rows(profile, profile, result, engine, types);
  add_contenders(engine, same, profile, Objective{}, types);
  ASSERT_GE(engine.contenders.size(), 2U);
  const std::vector<EngineRunChoice> runs = contender_engine_runs(engine);
  ASSERT_EQ(runs.size(), engine.contenders.size());
  const std::size_t rival = engine.contenders.back();
  EXPECT_EQ(runs.back().name, "llama.cpp itself (" + engine_invocation("llama.cpp", engine.plans[rival]) + ")");
  EXPECT_EQ(runs.back().k, engine.plans[rival].k.base);
  // In tqlab's semantics the profile's pick measures less; under the engine the rival does.
  std::vector<std::pair<std::string, double>> values;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const bool is_rival = engine.contenders[i] == rival;
    values.emplace_back(engine.plans[engine.contenders[i]].scored.name, is_rival ? 2.0 : 1.0);
    values.emplace_back(runs[i].name, is_rival ? 0.5 : 1.0);
  }
  Verification verification = measured_as(values);
  pick_measured_best(engine, same, profile, Objective{}, verification, "e2e_kld");
  EXPECT_EQ(*engine.best, rival);
  name_engine_run(engine, verification);
  const VerifiedRun* itself = verified_run(verification, "llama.cpp itself");
  ASSERT_NE(itself, nullptr);
  EXPECT_EQ(itself->names.front(), runs.back().name);
}

}  // namespace
}  // namespace tqlab
