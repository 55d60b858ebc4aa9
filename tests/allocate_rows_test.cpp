// allocate --engine's plans and the rows it sets beside them (src/allocate/): TensorRT-LLM's dtype
// per layer against every assignment of a type per layer enumerated, its range string; the (key, value)
// pair per layer (Model-Optimizer's) against every pair per layer enumerated, vLLM's layer map against every
// fp8_e4m3/nvfp4/fp16 plan and its presets, the hf_quant_config.json of a known plan; the folklore
// rules (each the plan of its shape with the most bytes within the budget, against their shapes
// enumerated), and the engine-shaped optimum never predicted worse than a rule its engine can run.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "allocate/allocation.h"
#include "allocate/engine_shapes.h"
#include "allocate/folklore_rules.h"
#include "allocate/heuristics.h"
#include "allocate/layer_types.h"
#include "allocate/measured_pick.h"
#include "allocate/modelopt_kv_config.h"
#include "allocate/same_bits.h"
#include "allocate/verify.h"
#include "allocate_test_util.h"
#include "test_support.h"

namespace tqlab {
namespace {

const std::vector<std::string> kThree{"tq:b=2,nc", "tq:b=3,nc", "tq:b=4,nc"};

// The choice giving every unit of layer i candidate per_layer[i] (layers numbered 0..L-1).
std::vector<int> per_layer_choice(const Profile& profile, const std::vector<int>& per_layer) {
  std::vector<int> choice;
  for (const UnitProfile& unit : profile.units) choice.push_back(per_layer[static_cast<std::size_t>(unit.unit.layer)]);
  return choice;
}

// `profile` per layer: each (layer, role) unit the sum of its heads' bytes, values and components.
Profile summed_by_layer(const Profile& profile) {
  Profile out = profile;
  out.granularity = Granularity::layer;
  out.units.clear();
  for (const UnitProfile& unit : profile.units) {
    const auto same = std::find_if(out.units.begin(), out.units.end(), [&](const UnitProfile& entry) {
      return entry.unit.layer == unit.unit.layer && entry.unit.role == unit.unit.role;
    });
    if (same == out.units.end()) {
      out.units.push_back(unit);
      out.units.back().unit.head = -1;
      continue;
    }
    same->values += unit.values;
    for (std::size_t c = 0; c < unit.candidates.size(); ++c) {
      same->candidates[c].bytes += unit.candidates[c].bytes;
      for (std::size_t i = 0; i < unit.candidates[c].components.size(); ++i) {
        same->candidates[c].components[i][0] += unit.candidates[c].components[i][0];
      }
    }
  }
  return out;
}

// TensorRT-LLM's shape (allocate/layer_types.h): every type per layer enumerated gives the same least
// damage; the plan's keys and values of a layer share its type, its range string names those types,
// and it is never better than the allocation.
TEST(EngineShapeTest, TrtllmLayerTypesEqualBruteForceOverEveryTypePerLayer) {
  std::mt19937_64 rng(13695);
  const std::vector<std::string> types{"nvfp4", "fp8_e4m3", "fp16"}, dtypes{"nvfp4", "fp8", "float16"};
  for (int instance = 0; instance < 12; ++instance) {
    const Profile profile = random_profile(rng, 1 + instance % 4, kThree);
    const int layers = static_cast<int>(profile.layers.size());
    for (const char* given : {"2.3", "3", "3.4", "4"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      double least = std::numeric_limits<double>::infinity();
      for (int code = 0; code < static_cast<int>(std::pow(3, layers)); ++code) {
        std::vector<int> per_layer;
        for (int i = 0, rest = code; i < layers; ++i, rest /= 3) per_layer.push_back(rest % 3);
        const std::vector<int> choice = per_layer_choice(profile, per_layer);
        if (profile.bytes_of(choice) <= budget.capacity) {
          least = std::min(least, score_choice(profile, Objective{}, "", choice).damage);
        }
      }
      const EngineAllocation engine = allocate_for_engine(profile, Objective{}, budget, "trtllm", types);
      ASSERT_EQ(engine.best.has_value(), !std::isinf(least)) << given;
      if (!engine.best) continue;
      const EnginePlan& best = engine.plans[*engine.best];
      EXPECT_NEAR(best.scored.damage, least, 1e-12 * least) << "instance " << instance << " budget " << given;
      EXPECT_LE(best.scored.bytes, budget.capacity);
      ASSERT_EQ(best.layer_types.size(), profile.layers.size());
      for (std::size_t u = 0; u < profile.units.size(); ++u) {
        const auto layer = static_cast<std::size_t>(profile.units[u].unit.layer);
        EXPECT_EQ(dtypes[static_cast<std::size_t>(best.scored.choice[u])], best.layer_types[layer]);
      }
      EXPECT_EQ(engine.invocation,
                "kv_cache_config: {dtype: \"" + trtllm_layer_ranges(profile.layers, best.layer_types) + "\"}");
      EXPECT_GE(best.scored.damage, allocate_bits(profile, Objective{}, budget).allocation.damage * (1 - 1e-12));
    }
  }
}

// The least damage within `capacity` over every assignment of one of `options` per layer (a pair's key
// format to the layer's keys, its value format to its values), enumerated; infinity when none fits.
double least_over_every_pair_per_layer(const Profile& profile, std::uint64_t capacity,
                                       const std::vector<KvPair>& options) {
  const int layers = static_cast<int>(profile.layers.size());
  const auto count = static_cast<int>(options.size());
  double least = std::numeric_limits<double>::infinity();
  for (int code = 0; code < static_cast<int>(std::pow(count, layers)); ++code) {
    std::vector<int> per_layer;
    for (int i = 0, rest = code; i < layers; ++i, rest /= count) per_layer.push_back(rest % count);
    std::vector<int> choice;
    for (const UnitProfile& unit : profile.units) {
      const KvPair pair = options[static_cast<std::size_t>(per_layer[static_cast<std::size_t>(unit.unit.layer)])];
      choice.push_back(unit.unit.role == Role::key ? pair.key : pair.value);
    }
    if (profile.bytes_of(choice) <= capacity)
      least = std::min(least, score_choice(profile, Objective{}, "", choice).damage);
  }
  return least;
}

// The pair solver (allocate/layer_types.h): pairs whose key and value formats differ, one of them twice
// in a role, give the least damage of every pair per layer enumerated, and each unit gets its layer's
// pair's format for its role.
TEST(EngineShapeTest, LayerPairsEqualBruteForceOverEveryPairPerLayer) {
  std::mt19937_64 rng(2272);
  const std::vector<std::string> four{"tq:b=2,nc", "tq:b=3,nc", "tq:b=4,nc", "tq:b=5,nc"};
  const std::vector<KvPair> options{{0, 1}, {2, 2}, {1, 3}, {3, 0}};
  for (int instance = 0; instance < 12; ++instance) {
    const Profile profile = random_profile(rng, 1 + instance % 4, four);
    for (const char* given : {"2.6", "3", "3.5", "4.2"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      const double least = least_over_every_pair_per_layer(profile, budget.capacity, options);
      const std::optional<LayerPairsPlan> plan = best_layer_pairs(profile, Objective{}, budget.capacity, options);
      ASSERT_EQ(plan.has_value(), !std::isinf(least)) << given;
      if (!plan) continue;
      EXPECT_TRUE(plan->exact);
      EXPECT_NEAR(score_choice(profile, Objective{}, "", plan->choice).damage, least, 1e-12 * least)
          << "instance " << instance << " budget " << given;
      EXPECT_LE(profile.bytes_of(plan->choice), budget.capacity);
      for (std::size_t u = 0; u < profile.units.size(); ++u) {
        const UnitProfile& unit = profile.units[u];
        const KvPair pair = options[static_cast<std::size_t>(plan->options[static_cast<std::size_t>(unit.unit.layer)])];
        EXPECT_EQ(plan->choice[u], unit.unit.role == Role::key ? pair.key : pair.value);
      }
    }
  }
}

// --engine modelopt: Model-Optimizer's three pairs per layer, enumerated; the plan's layer map names each
// layer's pair as Model-Optimizer spells it, every layer in it (no pair is unquantized).
TEST(EngineShapeTest, ModeloptPairsEqualBruteForceAndNameEachLayersPair) {
  std::mt19937_64 rng(2211);
  const std::vector<std::string> types{"nvfp4", "fp8_e4m3"};  // random_profile: 2 and 3 bits
  const std::vector<KvPair> pairs{{1, 1}, {1, 0}, {0, 0}};
  for (int instance = 0; instance < 12; ++instance) {
    const Profile profile = random_profile(rng, 1 + instance % 5, types);
    for (const char* given : {"2.3", "2.5", "2.8", "3"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      const double least = least_over_every_pair_per_layer(profile, budget.capacity, pairs);
      const EngineAllocation engine = allocate_for_engine(profile, Objective{}, budget, "modelopt", types);
      ASSERT_EQ(engine.best.has_value(), !std::isinf(least)) << given;
      if (!engine.best) continue;
      const EnginePlan& best = engine.plans[*engine.best];
      EXPECT_NEAR(best.scored.damage, least, 1e-12 * least) << "instance " << instance << " budget " << given;
      ASSERT_EQ(best.layer_map.size(), profile.layers.size());
      for (std::size_t u = 0; u < profile.units.size(); ++u) {
        const UnitProfile& unit = profile.units[u];
        const std::string& algo = best.layer_map[static_cast<std::size_t>(unit.unit.layer)].quant_algo;
        const std::string& spec = types[static_cast<std::size_t>(best.scored.choice[u])];
        const std::string expected = unit.unit.role == Role::key ? (algo == "NVFP4" ? "nvfp4" : "fp8_e4m3")
                                                                 : (algo == "FP8" ? "fp8_e4m3" : "nvfp4");
        EXPECT_EQ(spec, expected) << unit.unit.name() << " in a layer of " << algo;
      }
      EXPECT_EQ(engine.invocation, "--kv-cache-dtype auto");
      EXPECT_EQ(engine_loader_file(engine), "hf_quant_config.json");
    }
  }
  const std::string message = testing::input_error_message([] {
    check_engine_types("modelopt", {"fp8_e4m3", "fp16"}, "--candidates");
  });
  EXPECT_NE(message.find("--candidates 'fp16'"), std::string::npos) << message;
}

// vLLM's layer map: the least damage over every plan of fp8_e4m3, nvfp4 or fp16 per layer (keys and values
// alike) enumerated, so never worse than any such plan a preset, a rule or a uniform type would give; the
// engine's best is the least of the presets' plans and the map; fp16 layers are left out of the map.
TEST(EngineShapeTest, VllmLayerMapIsTheLeastOverEveryFp8Nvfp4Fp16PlanAndCompetesWithThePresets) {
  std::mt19937_64 rng(56116);
  const std::vector<std::string> types = default_engine_types("vllm");
  std::vector<KvPair> map_types;
  for (const char* spec : {"fp8_e4m3", "nvfp4", "fp16"}) {
    const auto at = static_cast<int>(std::find(types.begin(), types.end(), spec) - types.begin());
    ASSERT_LT(at, static_cast<int>(types.size())) << spec;
    map_types.push_back({at, at});
  }
  int map_best = 0;
  for (int instance = 0; instance < 10; ++instance) {
    const Profile profile = random_profile(rng, 1 + instance % 5, types);
    for (const char* given : {"4", "6", "8.5", "10"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      const EngineAllocation engine = allocate_for_engine(profile, Objective{}, budget, "vllm", types);
      const auto map = std::find_if(engine.plans.begin(), engine.plans.end(),
                                    [](const EnginePlan& plan) { return plan.layer_map_plan; });
      const double least = least_over_every_pair_per_layer(profile, budget.capacity, map_types);
      ASSERT_EQ(map != engine.plans.end(), !std::isinf(least)) << given;
      if (map == engine.plans.end()) continue;
      EXPECT_NEAR(map->scored.damage, least, 1e-12 * least) << "instance " << instance << " budget " << given;
      for (std::size_t u = 0; u < profile.units.size(); ++u) {
        const int layer = profile.units[u].unit.layer;
        const auto entry = std::find_if(map->layer_map.begin(), map->layer_map.end(),
                                        [&](const LayerAlgo& algo) { return algo.layer == layer; });
        ASSERT_NE(entry, map->layer_map.end()) << "layer " << layer << " is not in the plan's map";
        const std::string& spec = types[static_cast<std::size_t>(map->scored.choice[u])];
        EXPECT_EQ(entry->quant_algo.empty() ? "fp16" : entry->quant_algo == "FP8" ? "fp8_e4m3" : "nvfp4", spec);
      }
      ASSERT_TRUE(engine.best.has_value());
      for (const EnginePlan& plan : engine.plans)
        EXPECT_LE(engine.plans[*engine.best].scored.damage, plan.scored.damage);
      map_best += engine.plans[*engine.best].layer_map_plan;
      EXPECT_EQ(engine.invocation == "--kv-cache-dtype auto", engine.plans[*engine.best].layer_map_plan);
      const std::vector<LayerAlgo>& best_map = engine.plans[*engine.best].layer_map;
      const bool quantized = std::any_of(best_map.begin(), best_map.end(),
                                         [](const LayerAlgo& entry) { return !entry.quant_algo.empty(); });
      EXPECT_EQ(engine_loader_file(engine).empty(), !quantized);
    }
  }
  EXPECT_GT(map_best, 0) << "the map never won: the comparison above was never exercised both ways";
}

// engine_plan_of (what --verify's measured pick builds its contenders with) knows both layer maps: the
// solvers' best plans come back as themselves, named alike; vLLM's map leaves an fp16 layer out and refuses
// a layer whose keys and values differ, Model-Optimizer's takes FP8 keys with NVFP4 values but not the
// reverse.
TEST(EngineShapeTest, EnginePlanOfExpressesBothLayerMaps) {
  std::mt19937_64 rng(53770);
  const std::vector<std::string> pair_types{"nvfp4", "fp8_e4m3"};
  const Profile pairs_profile = random_profile(rng, 4, pair_types);
  const Budget budget = resolve_budget(pairs_profile, "2.6", "--budget");
  const EngineAllocation modelopt = allocate_for_engine(pairs_profile, Objective{}, budget, "modelopt", pair_types);
  ASSERT_TRUE(modelopt.best.has_value());
  const EnginePlan& best = modelopt.plans[*modelopt.best];
  const std::optional<EnginePlan> again =
      engine_plan_of(pairs_profile, Objective{}, "modelopt", pair_types, best.scored.choice);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->scored.name, best.scored.name);
  EXPECT_EQ(again->scored.choice, best.scored.choice);
  const auto choice_of = [](const Profile& profile, const std::vector<int>& keys, const std::vector<int>& values) {
    std::vector<int> choice;
    for (const UnitProfile& unit : profile.units) {
      const auto layer = static_cast<std::size_t>(unit.unit.layer);
      choice.push_back(unit.unit.role == Role::key ? keys[layer] : values[layer]);
    }
    return choice;
  };
  const std::optional<EnginePlan> mixed = engine_plan_of(pairs_profile, Objective{}, "modelopt", pair_types,
                                                         choice_of(pairs_profile, {1, 1, 0, 1}, {0, 1, 0, 1}));
  ASSERT_TRUE(mixed.has_value());
  EXPECT_EQ(mixed->scored.name, "modelopt layer map 0:FP8_K_NVFP4_V,1:FP8,2:NVFP4,3:FP8");
  EXPECT_FALSE(engine_plan_of(pairs_profile, Objective{}, "modelopt", pair_types,
                              choice_of(pairs_profile, {0, 1, 1, 1}, {1, 1, 1, 1}))
                   .has_value());  // NVFP4 keys with FP8 values
  const std::vector<std::string> vllm_types{"vllm_fp8", "fp16", "fp8_e4m3", "nvfp4"};
  const Profile vllm_profile = random_profile(rng, 4, vllm_types);
  const std::optional<EnginePlan> map = engine_plan_of(vllm_profile, Objective{}, "vllm", vllm_types,
                                                       choice_of(vllm_profile, {2, 1, 3, 2}, {2, 1, 3, 2}));
  ASSERT_TRUE(map.has_value());
  EXPECT_TRUE(map->layer_map_plan);
  EXPECT_EQ(map->scored.name, "vllm layer map 0:FP8,1:unquantized,2:NVFP4,3:FP8");
  EXPECT_EQ(engine_invocation("vllm", *map), "--kv-cache-dtype auto");
  EXPECT_FALSE(
      engine_plan_of(vllm_profile, Objective{}, "vllm", vllm_types, choice_of(vllm_profile, {2, 2, 2, 2}, {3, 3, 3, 3}))
          .has_value());  // FP8-K/NVFP4-V: refused by vLLM PR #56116
  const std::optional<EnginePlan> preset = engine_plan_of(vllm_profile, Objective{}, "vllm", vllm_types,
                                                          choice_of(vllm_profile, {0, 1, 0, 0}, {0, 1, 0, 0}));
  ASSERT_TRUE(preset.has_value());
  EXPECT_EQ(preset->preset, "fp8");  // a preset's formats stay a preset plan
}

// With --verify the engine is told to run the least measured of its contenders (allocate/measured_pick.h):
// the loader file follows that plan, there when it is a layer map, gone when it is a preset. (random_profile
// gives the map's formats the most bits and least damage here, so the profile picks the map.)
TEST(EngineShapeTest, TheLoaderFileFollowsTheMeasuredPick) {
  std::mt19937_64 rng(57446);
  const std::vector<std::string> types{"vllm_fp8", "fp16", "fp8_e4m3", "nvfp4"};
  int to_a_preset = 0;
  for (int instance = 0; instance < 16; ++instance) {
    const Profile profile = random_profile(rng, 2 + instance % 5, types);
    for (const char* given : {"3", "4", "5"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      const AllocationResult result = allocate_bits(profile, Objective{}, budget);
      const EngineAllocation solved = allocate_for_engine(profile, Objective{}, budget, "vllm", types);
      if (!solved.best) continue;
      SameBits rows = same_bits_rows(profile, summed_by_layer(profile), result, solved, types);
      // Every plan a contender (add_contenders adds those the rows at the same bits hold): the presets' and the map.
      EngineAllocation engine = solved;
      for (std::size_t index = 0; index < engine.plans.size(); ++index) engine.contenders.push_back(index);
      for (const std::size_t chosen : engine.contenders) {
        EngineAllocation picked = engine;
        SameBits same = rows;
        Verification verification;
        for (const std::size_t index : engine.contenders) {
          VerifiedRun& run = verification.runs.emplace_back();
          run.names.push_back(contender_run_name(engine, index));
          MetricSummary summary;
          summary.mean = index == chosen ? 0.0 : 1.0;
          run.metrics.emplace_back("e2e_kld", summary);
        }
        pick_measured_best(picked, same, profile, Objective{}, verification, "e2e_kld");
        ASSERT_EQ(*picked.best, chosen);
        const EnginePlan& plan = picked.plans[chosen];
        const bool map = std::any_of(plan.layer_map.begin(), plan.layer_map.end(),
                                     [](const LayerAlgo& entry) { return !entry.quant_algo.empty(); });
        EXPECT_EQ(engine_loader_file(picked), map ? "hf_quant_config.json" : "");
        EXPECT_EQ(picked.invocation == "--kv-cache-dtype auto", plan.layer_map_plan);
        const bool was_map = !engine_loader_file(solved).empty();
        to_a_preset += was_map && !map;
      }
    }
  }
  EXPECT_GT(to_a_preset, 0) << "no pick moved from a map to a preset";
}

// The file for a known plan, written out by hand from Model-Optimizer's schema-v1 export (its
// convert_hf_quant_config_format tests) and vLLM PR #56116's reading of it.
TEST(EngineShapeTest, TheLayerMapFileOfAKnownPlan) {
  const std::vector<LayerAlgo> map{{0, "FP8"}, {1, ""}, {2, "NVFP4"}, {3, "FP8_K_NVFP4_V"}};  // layer 1 left out
  nlohmann::ordered_json config = modelopt_kv_config(map);
  const std::string version = config["producer"]["version"];
  EXPECT_EQ(version.rfind("tqlab ", 0), 0U) << version;  // the producer's version names who wrote the file
  config["producer"]["version"] = "V";
  const std::string expected = R"({"producer":{"name":"modelopt","version":"V"},)"
                               R"("quantization":{"kv_cache_quant_algo":"MIXED_PRECISION",)"
                               R"("kv_cache_quantized_layers":{"model.layers.0.self_attn":{"quant_algo":"FP8"},)"
                               R"("model.layers.2.self_attn":{"quant_algo":"NVFP4"},)"
                               R"("model.layers.3.self_attn":{"quant_algo":"FP8_K_NVFP4_V"}},)"
                               R"("kv_cache_schema_version":1}})";
  EXPECT_EQ(config.dump(), expected);
  EXPECT_EQ(modelopt_quant_algo("fp8_e4m3", "fp8_e4m3"), "FP8");
  EXPECT_EQ(modelopt_quant_algo("nvfp4", "nvfp4"), "NVFP4");
  EXPECT_EQ(modelopt_quant_algo("fp8_e4m3", "nvfp4"), "FP8_K_NVFP4_V");
  EXPECT_EQ(modelopt_quant_algo("nvfp4", "fp8_e4m3"), "");
  EXPECT_EQ(modelopt_quant_algo("fp16", "fp16"), "");
}

TEST(EngineShapeTest, TrtllmRangesJoinConsecutiveLayersOfOneDtype) {
  EXPECT_EQ(trtllm_layer_ranges({0, 1, 2, 3}, {"fp8", "fp8", "nvfp4", "float16"}), "0-1:fp8,2:nvfp4,3:float16");
  EXPECT_EQ(trtllm_layer_ranges({0, 1, 2, 3, 4}, std::vector<std::string>(5, "nvfp4")), "0-4:nvfp4");
  EXPECT_EQ(trtllm_layer_ranges({0, 2, 3}, {"fp8", "fp8", "fp8"}), "0:fp8,2-3:fp8");
  EXPECT_EQ(trtllm_layer_ranges({7}, {"bfloat16"}), "7:bfloat16");
  const std::string message = testing::input_error_message([] {
    check_engine_types("trtllm", {"fp16", "q8_0"}, "--candidates");
  });
  EXPECT_NE(message.find("--candidates 'q8_0'"), std::string::npos) << message;
  check_engine_types("trtllm", {"fp16", "bf16", "fp8_e4m3", "nvfp4"}, "--candidates");
  check_engine_types("llama.cpp", {"q8_0"}, "--candidates");
}

TEST(FolkloreRulesTest, TheEndsRuleRaisesFifteenAndTenPercent) {
  const std::vector<std::array<int, 3>> expected{{1, 1, 0},  {2, 1, 1},  {4, 1, 1},  {10, 2, 1},
                                                 {12, 2, 1}, {22, 3, 2}, {32, 5, 3}, {80, 12, 8}};
  for (const auto& [layers, first, last] : expected) {
    EXPECT_EQ(ends_rule_first_layers(layers), first) << layers;
    EXPECT_EQ(ends_rule_last_layers(layers), last) << layers;
  }
}

// Each rule is the plan of its shape (enumerated here) with the most bytes within the budget, or,
// when none fits, the cheapest marked as not fitting.
TEST(FolkloreRulesTest, EachRuleIsItsShapeWithTheMostBytesWithinTheBudget) {
  std::mt19937_64 rng(1509);
  const std::vector<std::string> candidates{"tq:b=2,nc", "tq:b=3,nc", "tq:b=4,nc", "tq:b=5,nc", "fp16"};
  const std::vector<std::string> names{"t2", "t3", "t4", "t5", "f16"};
  for (int instance = 0; instance < 16; ++instance) {
    const Profile profile = random_profile(rng, 2 + instance % 8, candidates);
    const int layers = static_cast<int>(profile.layers.size()), count = static_cast<int>(candidates.size());
    const int edge = std::min(2, layers / 2), first = ends_rule_first_layers(layers);
    const int last = ends_rule_last_layers(layers);
    for (const char* given : {"2.5", "3.5", "4.5", "5.5", "7"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      std::vector<std::vector<int>> vllm_shape, ends_shape;
      for (int a = 0; a < count; ++a) {
        std::vector<int> kept(static_cast<std::size_t>(layers), a);
        for (int i = 0; i < layers; ++i) {
          if (i < edge || i >= layers - edge) kept[static_cast<std::size_t>(i)] = 4;
        }
        vllm_shape.push_back(kept);
        for (int b = a + 1; b < count; ++b) {  // ascending bits: b dearer than a
          std::vector<int> ends(static_cast<std::size_t>(layers), a);
          for (int i = 0; i < layers; ++i) {
            if (i < first || i >= layers - last) ends[static_cast<std::size_t>(i)] = b;
          }
          ends_shape.push_back(ends);
        }
      }
      for (const auto& entry : {std::pair{vllm_boundary_rule(profile, budget.capacity, names), vllm_shape},
                                std::pair{ends_rule(profile, budget.capacity, names), ends_shape}}) {
        // Not a structured binding: clang before 16 (the fuzz build's clang 14) cannot capture one.
        const std::optional<RulePlan>& rule = entry.first;
        const std::vector<std::vector<int>>& shape = entry.second;
        ASSERT_TRUE(rule.has_value());
        std::uint64_t most = 0, cheapest = std::numeric_limits<std::uint64_t>::max();
        bool any = false;
        for (const std::vector<int>& plan : shape) {
          const std::uint64_t bytes = profile.bytes_of(per_layer_choice(profile, plan));
          cheapest = std::min(cheapest, bytes);
          if (bytes <= budget.capacity) most = std::max(most, bytes), any = true;
        }
        EXPECT_EQ(rule->fits, any) << rule->name << " at " << given;
        EXPECT_EQ(profile.bytes_of(rule->choice), any ? most : cheapest) << rule->name << " at " << given;
        const bool in_shape = std::any_of(shape.begin(), shape.end(), [&](const std::vector<int>& plan) {
          return per_layer_choice(profile, plan) == rule->choice;
        });
        EXPECT_TRUE(in_shape) << rule->name << " at " << given;
      }
    }
  }
  const Profile four = random_profile(rng, 4, candidates);
  const std::optional<RulePlan> all_kept = vllm_boundary_rule(four, four.bytes_of(uniform_choice(four, 3)), names);
  ASSERT_TRUE(all_kept.has_value());
  EXPECT_FALSE(all_kept->fits);
  EXPECT_EQ(all_kept->name, "vLLM's boundary rule (every layer f16)");
  const Profile without_fp16 = random_profile(rng, 4, {"tq:b=2,nc", "tq:b=3,nc"});
  EXPECT_FALSE(vllm_boundary_rule(without_fp16, 1 << 30, {"t2", "t3"}).has_value());
}

// The engine's optimum is never predicted worse than a rule or a uniform type its engine can run at
// the same budget: for ik_llama.cpp (first/last ranges) uniform, vLLM's rule and the ends rule; for
// TensorRT-LLM (a type per layer) every rule; the allocation never worse than the engine's plan.
TEST(SameBitsTest, TheEngineOptimumIsNeverWorseThanARuleItsEngineCanRun) {
  std::mt19937_64 rng(1599);
  const std::vector<std::string> candidates{"tq:b=2,nc", "tq:b=3,nc", "tq:b=4,nc", "fp16"};
  for (int instance = 0; instance < 16; ++instance) {
    const Profile profile = random_profile(rng, 2 + instance % 9, candidates);
    for (const char* given : {"2.5", "3.2", "4", "5"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      const AllocationResult result = allocate_bits(profile, Objective{}, budget);
      for (const auto& [engine_name, types] :
           {std::pair<std::string, std::vector<std::string>>{"ik_llama.cpp", {"q4_0", "q5_0", "q8_0", "f16"}},
            std::pair<std::string, std::vector<std::string>>{"trtllm", {"nvfp4", "fp8_e4m3", "bf16", "fp16"}}}) {
        const EngineAllocation engine = allocate_for_engine(profile, Objective{}, budget, engine_name, types);
        ASSERT_TRUE(engine.best.has_value());
        const SameBits same = same_bits_rows(profile, summed_by_layer(profile), result, engine, types);
        ASSERT_GE(same.rows.size(), 5U);
        // The engine's plan over the per-layer profile's units: the same damage (that profile is the sum).
        ASSERT_TRUE(same.engine_on_other.has_value());
        EXPECT_NEAR(same.engine_on_other->damage, same.rows.front().scored.damage, 1e-12);
        EXPECT_EQ(same.rows.front().kind, "engine");
        const double best = same.rows.front().scored.damage;
        for (const SameBitsRow& row : same.rows) {
          EXPECT_LE(row.fits, row.scored.bytes <= budget.capacity) << row.label;
          if (row.kind == "optimum") {
            EXPECT_LE(row.scored.damage, best * (1 + 1e-12)) << row.label;
            EXPECT_GE(*optimum_damage_saved(same, row), -1e-12) << row.label;
          }
          const bool runnable = row.kind != "engine" && !row.on_other &&
                                engine_plan_of(profile, Objective{}, engine_name, types, row.scored.choice).has_value();
          if (row.kind == "uniform" || (engine_name == "trtllm" && row.kind == "rule")) {
            EXPECT_TRUE(runnable) << engine_name << " runs " << row.label;
          }
          if (runnable && row.fits) {
            EXPECT_LE(best, row.scored.damage * (1 + 1e-12))
                << engine_name << " against " << row.label << " at " << given;
          }
        }
      }
    }
  }
}

// A choice moves between granularities only when every head of a (layer, role) has one candidate.
TEST(SameBitsTest, AChoiceMovesToTheOtherGranularityWhenItsHeadsAgree) {
  std::mt19937_64 rng(30);
  const Profile by_head = random_profile(rng, 3, kThree);
  const Profile by_layer = summed_by_layer(by_head);
  std::vector<int> per_layer;
  for (const UnitProfile& unit : by_layer.units)
    per_layer.push_back((unit.unit.layer + (unit.unit.role == Role::key)) % 3);
  const std::optional<std::vector<int>> heads = choice_on(by_layer, per_layer, by_head);
  ASSERT_TRUE(heads.has_value());
  for (std::size_t u = 0; u < by_head.units.size(); ++u) {
    const AllocationUnit& unit = by_head.units[u].unit;
    EXPECT_EQ((*heads)[u], (unit.layer + (unit.role == Role::key)) % 3) << unit.name();
  }
  EXPECT_EQ(choice_on(by_head, *heads, by_layer), per_layer);
  std::vector<int> split = *heads;
  split[0] = (split[0] + 1) % 3;  // L0.h0.K differs from L0.h1.K
  EXPECT_FALSE(choice_on(by_head, split, by_layer).has_value());
}

}  // namespace
}  // namespace tqlab
