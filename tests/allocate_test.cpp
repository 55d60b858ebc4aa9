// tqlab allocate's solver and rules (src/allocate/): the exact knapsack against every assignment
// enumerated on small random instances, the Lagrangian's bound and feasibility, an allocation at a
// uniform spec's bits never predicted worse than that spec, the boundary rule within its budget,
// a choice written as a sweep run's layered specs giving every unit its spec back, the candidate
// list split where specs begin, a profile through its JSON and the cache unchanged, and the layer
// profile the sum of the head one; an engine's plans solved exactly over its shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "allocate/allocation.h"
#include "allocate/candidates.h"
#include "allocate/engine_shapes.h"
#include "allocate/heuristics.h"
#include "allocate/knapsack.h"
#include "allocate/profile_cache.h"
#include "allocate/profile_json.h"
#include "allocate_test_util.h"
#include "model_test_util.h"
#include "quant/vllm_presets.h"
#include "test_support.h"

namespace tqlab {
namespace {

std::vector<KnapsackGroup> random_groups(std::mt19937_64& rng, int groups, int options) {
  std::uniform_int_distribution<std::uint64_t> cost(1, 40);
  std::uniform_real_distribution<double> damage(0.0, 10.0);
  std::vector<KnapsackGroup> out(static_cast<std::size_t>(groups));
  for (KnapsackGroup& group : out) {
    for (int j = 0; j < options; ++j) group.push_back({cost(rng) * 16, damage(rng)});  // a shared factor: the gcd
  }
  return out;
}

TEST(KnapsackTest, ExactEqualsBruteForceOnRandomInstances) {
  std::mt19937_64 rng(20240611);
  int feasible = 0;
  for (int instance = 0; instance < 300; ++instance) {
    const int groups = 1 + instance % 5, options = 1 + (instance / 5) % 4;
    const std::vector<KnapsackGroup> instance_groups = random_groups(rng, groups, options);
    const ExactKnapsack table(instance_groups);
    std::uint64_t most = 0;
    for (const KnapsackGroup& group : instance_groups) {
      std::uint64_t dearest = 0;
      for (const KnapsackOption& option : group) dearest = std::max(dearest, option.cost);
      most += dearest;
    }
    for (std::uint64_t capacity = 0; capacity <= most + 16; capacity += 1 + most / 23) {
      const auto brute = solve_knapsack_brute_force(instance_groups, capacity);
      const auto exact = table.solve(capacity);
      ASSERT_EQ(brute.has_value(), exact.has_value()) << "instance " << instance << " capacity " << capacity;
      if (!brute) continue;
      ++feasible;
      EXPECT_NEAR(exact->damage, brute->damage, 1e-9) << "instance " << instance << " capacity " << capacity;
      EXPECT_LE(exact->cost, capacity);
      EXPECT_TRUE(exact->exact);
      EXPECT_NEAR(*table.least_damage(capacity), brute->damage, 1e-9);
      const auto lagrangian = solve_knapsack_lagrangian(instance_groups, capacity);
      ASSERT_TRUE(lagrangian.has_value());
      EXPECT_LE(lagrangian->cost, capacity);
      EXPECT_GE(lagrangian->damage, brute->damage - 1e-9);
      EXPECT_LE(lagrangian->lower_bound, brute->damage + 1e-9) << "the Lagrangian's bound is not a lower bound";
      if (lagrangian->exact) {
        EXPECT_NEAR(lagrangian->damage, brute->damage, 1e-9);
      }
    }
  }
  EXPECT_GT(feasible, 500);
}

const std::vector<std::string> kLadder{"tq:b=2,nc", "tq:b=3,nc", "tq:b=4,nc", "tq:b=5,nc"};

TEST(AllocationTest, NeverPredictsWorseThanAUniformSpecAtItsBits) {
  std::mt19937_64 rng(7);
  for (int instance = 0; instance < 20; ++instance) {
    const Profile profile = random_profile(rng, 2 + instance % 5, kLadder);
    for (const std::string& spec : kLadder) {
      const Budget budget = resolve_budget(profile, spec, "--budget");
      const AllocationResult result = allocate_bits(profile, Objective{}, budget);
      ASSERT_FALSE(result.uniform.empty());
      const ScoredChoice& uniform = result.uniform.back();
      EXPECT_EQ(uniform.name, "uniform " + spec);
      EXPECT_LE(result.allocation.bytes, budget.capacity);
      EXPECT_LE(result.allocation.damage, uniform.damage * (1 + 1e-12)) << spec;
      EXPECT_EQ(result.solver, "dp");
      if (result.boundary) {
        EXPECT_LE(result.boundary->bytes, budget.capacity);
        EXPECT_LE(result.allocation.damage, result.boundary->damage * (1 + 1e-12));
      }
    }
  }
}

// llama.cpp's shape: every (K type, V type) plan is there, each scored as the profile scores its
// choice, the best the least damage within the budget (brute force over the pairs), never worse
// than a uniform type that fits and never better than the unconstrained allocation; the flags name it.
TEST(EngineShapeTest, LlamaCppBestIsTheLeastDamageOverTypePairsWithinTheBudget) {
  std::mt19937_64 rng(30);
  const std::vector<std::string> types{"t2", "t3", "t4", "t5"};  // the engine's names of kLadder
  for (int instance = 0; instance < 20; ++instance) {
    const Profile profile = random_profile(rng, 2 + instance % 4, kLadder);
    for (const char* given : {"2.5", "3.2", "3.5", "4", "4.7", "6"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      const EngineAllocation engine = allocate_for_engine(profile, Objective{}, budget, "llama.cpp", types);
      ASSERT_EQ(engine.plans.size(), types.size() * types.size());
      double least = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < types.size(); ++k) {
        for (std::size_t v = 0; v < types.size(); ++v) {
          std::vector<int> choice;
          for (const UnitProfile& unit : profile.units) {
            choice.push_back(static_cast<int>(unit.unit.role == Role::key ? k : v));
          }
          if (profile.bytes_of(choice) > budget.capacity) continue;
          least = std::min(least, score_choice(profile, Objective{}, "", choice).damage);
        }
      }
      if (std::isinf(least)) {
        EXPECT_FALSE(engine.best.has_value()) << given;
        EXPECT_TRUE(engine.invocation.empty());
        continue;
      }
      ASSERT_TRUE(engine.best.has_value()) << given;
      const EnginePlan& best = engine.plans[*engine.best];
      EXPECT_EQ(best.scored.damage, least) << given;
      EXPECT_LE(best.scored.bytes, budget.capacity);
      EXPECT_EQ(engine.invocation, "-ctk " + best.k.base + " -ctv " + best.v.base + " -fa on");
      const AllocationResult result = allocate_bits(profile, Objective{}, budget);
      EXPECT_LE(result.allocation.damage, best.scored.damage * (1 + 1e-12)) << given;
      for (const ScoredChoice& uniform : result.uniform) EXPECT_LE(best.scored.damage, uniform.damage) << given;
    }
  }
  const Profile profile = random_profile(rng, 2, kLadder);
  const Budget budget = resolve_budget(profile, "6", "--budget");
  EXPECT_EQ(allocate_for_engine(profile, Objective{}, budget, "llama.cpp:rot=off", types).invocation,
            "LLAMA_ATTN_ROT_DISABLE=1 -ctk t5 -ctv t5 -fa on");
  const std::string message =
      testing::input_error_message([&] { (void)allocate_for_engine(profile, Objective{}, budget, "tqlab", types); });
  EXPECT_NE(message.find("no allocation shape"), std::string::npos) << message;
}

// ik_llama.cpp's shape (allocate/layer_ranges.h) against every pair of a key plan and a value plan
// enumerated: the same least damage within the budget, a choice that is the plan it names, and
// never worse than llama.cpp's one-type plans (a special case) nor better than the allocation.
TEST(EngineShapeTest, LayerRangesEqualBruteForceOverEveryRangePlan) {
  std::mt19937_64 rng(1599);
  const std::vector<std::string> ladder{"tq:b=2,nc", "tq:b=3,nc", "tq:b=4,nc"};
  const std::vector<std::string> types{"t2", "t3", "t4"};
  for (int instance = 0; instance < 12; ++instance) {
    const Profile profile = random_profile(rng, 1 + instance % 4, ladder);
    const int layers = static_cast<int>(profile.layers.size()), count = static_cast<int>(ladder.size());
    // Every role plan as a candidate per layer position.
    std::vector<std::vector<int>> role_plans;
    for (int base = 0; base < count; ++base)
      for (int first = 0; first < count; ++first)
        for (int n = 0; n <= layers; ++n)
          for (int last = 0; last < count; ++last)
            for (int m = 0; n + m <= layers; ++m) {
              std::vector<int> per_layer;
              for (int i = 0; i < layers; ++i) per_layer.push_back(i < n ? first : i >= layers - m ? last : base);
              role_plans.push_back(per_layer);
            }
    for (const char* given : {"2.3", "3", "3.4", "4"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      double least = std::numeric_limits<double>::infinity();
      for (const std::vector<int>& key : role_plans) {
        for (const std::vector<int>& value : role_plans) {
          std::vector<int> choice;
          for (const UnitProfile& unit : profile.units) {
            choice.push_back((unit.unit.role == Role::key ? key : value)[static_cast<std::size_t>(unit.unit.layer)]);
          }
          if (profile.bytes_of(choice) <= budget.capacity) {
            least = std::min(least, score_choice(profile, Objective{}, "", choice).damage);
          }
        }
      }
      const EngineAllocation ranges = allocate_for_engine(profile, Objective{}, budget, "ik_llama.cpp", types);
      ASSERT_EQ(ranges.best.has_value(), !std::isinf(least)) << given;
      if (!ranges.best) continue;
      const EnginePlan& best = ranges.plans[*ranges.best];
      EXPECT_NEAR(best.scored.damage, least, 1e-12 * least) << "instance " << instance << " budget " << given;
      EXPECT_LE(best.scored.bytes, budget.capacity);
      for (std::size_t u = 0; u < profile.units.size(); ++u) {
        const UnitProfile& unit = profile.units[u];
        const RoleTypes& role = unit.unit.role == Role::key ? best.k : best.v;
        const std::string& expected = unit.unit.layer < role.first_layers            ? role.first
                                      : unit.unit.layer >= layers - role.last_layers ? role.last
                                                                                     : role.base;
        EXPECT_EQ(types[static_cast<std::size_t>(best.scored.choice[u])], expected) << unit.unit.name();
      }
      const EngineAllocation one_type = allocate_for_engine(profile, Objective{}, budget, "llama.cpp", types);
      ASSERT_TRUE(one_type.best.has_value());
      EXPECT_LE(best.scored.damage, one_type.plans[*one_type.best].scored.damage * (1 + 1e-12));
      EXPECT_GE(best.scored.damage, allocate_bits(profile, Objective{}, budget).allocation.damage * (1 - 1e-12));
    }
  }
}

// vLLM's shape (allocate/skip_layers.h): per preset, every set of kept layers enumerated (the
// boundary ones always kept) gives the same least damage; the plan keeps what it says, names the
// layers beyond the boundary in its flags, and is never better than the allocation.
TEST(EngineShapeTest, VllmSkipLayersEqualBruteForceOverEveryKeptSet) {
  std::mt19937_64 rng(57445);
  const std::vector<std::string> types = default_engine_types("vllm");
  std::vector<std::string> ladder;
  for (std::size_t c = 0; c < types.size(); ++c) ladder.push_back("tq:b=" + std::to_string(c + 2) + ",nc");
  const auto index_of = [&](std::string_view spec) {
    return static_cast<int>(std::find(types.begin(), types.end(), spec) - types.begin());
  };
  for (int instance = 0; instance < 10; ++instance) {
    const Profile profile = random_profile(rng, 1 + instance % 6, ladder);
    const int layers = static_cast<int>(profile.layers.size());
    for (const char* given : {"5", "7", "9", "12"}) {
      const Budget budget = resolve_budget(profile, given, "--budget");
      const EngineAllocation vllm = allocate_for_engine(profile, Objective{}, budget, "vllm", types);
      double least = std::numeric_limits<double>::infinity();
      for (const VllmPreset& preset : vllm_presets()) {
        for (int kept = 0; kept < (1 << layers); ++kept) {
          std::vector<int> choice;
          bool allowed = true;
          for (int layer = 0; layer < layers; ++layer) {
            allowed = allowed && (vllm_layer_quantized(preset, layer, layers) || (kept >> layer & 1));
          }
          if (!allowed) continue;
          for (const UnitProfile& unit : profile.units) {
            const bool keep = kept >> unit.unit.layer & 1;
            choice.push_back(keep ? index_of("fp16")
                                  : index_of(unit.unit.role == Role::key ? preset.key_spec : preset.value_spec));
          }
          if (profile.bytes_of(choice) <= budget.capacity) {
            least = std::min(least, score_choice(profile, Objective{}, "", choice).damage);
          }
        }
      }
      // The presets' best; the layer map (allocate_rows_test.cpp) competes with it for the engine's best.
      const EnginePlan* presets_best = nullptr;
      for (const EnginePlan& plan : vllm.plans) {
        if (!plan.preset.empty() && (presets_best == nullptr || plan.scored.damage < presets_best->scored.damage)) {
          presets_best = &plan;
        }
      }
      ASSERT_EQ(presets_best != nullptr, !std::isinf(least)) << given;
      if (presets_best == nullptr) continue;
      const EnginePlan& best = *presets_best;
      EXPECT_NEAR(best.scored.damage, least, 1e-12 * least) << "instance " << instance << " budget " << given;
      EXPECT_LE(best.scored.bytes, budget.capacity);
      std::string flags = "--kv-cache-dtype " + best.preset;
      for (std::size_t i = 0; i < best.skip_layers.size(); ++i) {
        flags += (i == 0 ? " --kv-cache-dtype-skip-layers " : " ") + std::to_string(best.skip_layers[i]);
      }
      ASSERT_TRUE(vllm.best.has_value());
      if (&vllm.plans[*vllm.best] == presets_best) EXPECT_EQ(vllm.invocation, flags);
      for (std::size_t u = 0; u < profile.units.size(); ++u) {
        const UnitProfile& unit = profile.units[u];
        const bool kept = std::count(best.kept_layers.begin(), best.kept_layers.end(), unit.unit.layer) > 0;
        EXPECT_EQ(best.scored.choice[u],
                  kept ? index_of("fp16") : index_of(unit.unit.role == Role::key ? best.k.base : best.v.base));
      }
      EXPECT_GE(best.scored.damage, allocate_bits(profile, Objective{}, budget).allocation.damage * (1 - 1e-12));
    }
  }
}

TEST(AllocationTest, AnImpossibleBudgetNamesTheCheapestBits) {
  std::mt19937_64 rng(3);
  const Profile profile = random_profile(rng, 3, kLadder);
  const std::string message = testing::input_error_message(
      [&] { (void)allocate_bits(profile, Objective{}, resolve_budget(profile, "1.5", "--budget")); });
  EXPECT_NE(message.find("--budget 1.5"), std::string::npos) << message;
  EXPECT_NE(message.find("cheapest"), std::string::npos) << message;
  EXPECT_NE(testing::input_error_message([&] {
              (void)resolve_budget(profile, "tq:b=9", "--budget");
            }).find("--budget 'tq:b=9'"),
            std::string::npos);
}

TEST(AllocationTest, BoundaryRaisesTheEndsAndFitsTheBudget) {
  std::mt19937_64 rng(11);
  const Profile profile = random_profile(rng, 8, kLadder);
  const Budget budget = resolve_budget(profile, "tq:b=3,nc", "--budget");
  const std::optional<std::vector<int>> choice = boundary_choice(profile, budget.capacity);
  ASSERT_TRUE(choice.has_value());
  EXPECT_LE(profile.bytes_of(*choice), budget.capacity);
  // Units are layer-major with 4 per layer: the first and last two layers one rung up (4 bits).
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    const int layer = profile.units[u].unit.layer;
    if (layer < 2 || layer >= 6) {
      EXPECT_EQ((*choice)[u], 2) << profile.units[u].unit.name();
    } else {
      EXPECT_LT((*choice)[u], 2) << profile.units[u].unit.name();
    }
  }
}

TEST(AllocationTest, ChoiceSpecGivesEveryUnitItsSpec) {
  std::mt19937_64 rng(5);
  const Profile profile = random_profile(rng, 4, kLadder);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(kLadder.size()) - 1);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int> choice;
    for (std::size_t u = 0; u < profile.units.size(); ++u) choice.push_back(trial % 3 == 0 ? 1 : pick(rng));
    for (Role role : {Role::key, Role::value}) {
      const LayeredSpec spec = choice_spec(profile, choice, role);
      for (std::size_t u = 0; u < profile.units.size(); ++u) {
        const AllocationUnit& unit = profile.units[u].unit;
        if (unit.role != role) continue;
        EXPECT_EQ(spec.spec_for(unit.layer, unit.head), kLadder[static_cast<std::size_t>(choice[u])]) << unit.name();
      }
      if (trial % 3 == 0) {
        EXPECT_TRUE(spec.is_uniform());
      }
    }
  }
}

TEST(CandidatesTest, SplitsWhereASpecBegins) {
  EXPECT_EQ(split_candidate_list("tq:b=3,nc,fp16,tq:b=4,nc,block=32", "--candidates"),
            (std::vector<std::string>{"tq:b=3,nc", "fp16", "tq:b=4,nc,block=32"}));
  EXPECT_NE(testing::input_error_message([] {
              (void)split_candidate_list("tq:b=3,,fp16", "--candidates");
            }).find("--candidates"),
            std::string::npos);
  const std::string message = testing::input_error_message([] {
    (void)canonical_candidates({"tq:b=3,nc", "nosuch:b=2"}, {64}, "--candidates");
  });
  EXPECT_NE(message.find("--candidates"), std::string::npos) << message;
  EXPECT_EQ(default_candidates().size(), 8u);
}

// An offline profile of random components (3 per candidate per seed) at layer-head granularity.
Profile random_offline_profile(std::mt19937_64& rng) {
  Profile profile = random_profile(rng, 3, kLadder);
  profile.kind = ProfileKind::offline;
  profile.seeds = {0, 5};
  std::uniform_real_distribution<double> share(0.0, 0.01);
  for (UnitProfile& unit : profile.units) {
    for (UnitMeasurement& measured : unit.candidates) {
      measured.components.assign(3, {});
      for (auto& per_seed : measured.components) per_seed = {share(rng), share(rng)};
    }
  }
  profile.content_key = std::string(64, 'a');
  profile.source = R"({"kind":"offline"})";
  return profile;
}

void expect_same_units(const Profile& a, const Profile& b) {
  ASSERT_EQ(a.units.size(), b.units.size());
  for (std::size_t u = 0; u < a.units.size(); ++u) {
    EXPECT_EQ(a.units[u].unit.name(), b.units[u].unit.name());
    EXPECT_EQ(a.units[u].values, b.units[u].values);
    ASSERT_EQ(a.units[u].candidates.size(), b.units[u].candidates.size());
    for (std::size_t c = 0; c < a.units[u].candidates.size(); ++c) {
      EXPECT_EQ(a.units[u].candidates[c].bytes, b.units[u].candidates[c].bytes);
      EXPECT_EQ(a.units[u].candidates[c].components, b.units[u].candidates[c].components);  // 17 digits: exact
    }
  }
}

TEST(ProfileTest, JsonAndCacheGiveTheProfileBack) {
  std::mt19937_64 rng(9);
  const Profile profile = random_offline_profile(rng);
  const Profile back = profile_from_json(nlohmann::json::parse(profile_json(profile, nullptr).dump()), "p.json");
  EXPECT_EQ(back.candidates, profile.candidates);
  EXPECT_EQ(back.seeds, profile.seeds);
  EXPECT_EQ(back.layers, profile.layers);
  EXPECT_EQ(back.content_key, profile.content_key);
  expect_same_units(profile, back);

  const std::string folder = testing::scratch_folder("allocate_cache");
  const std::string path = profile_cache_path(folder, ProfileKind::offline, profile.content_key);
  write_cached_profile(path, profile);
  std::string warning;
  const std::optional<Profile> cached = read_cached_profile(path, profile.content_key, profile, warning);
  ASSERT_TRUE(cached.has_value()) << warning;
  expect_same_units(profile, *cached);
  EXPECT_FALSE(read_cached_profile(path, std::string(64, 'b'), profile, warning).has_value());
  EXPECT_NE(warning.find("another profile"), std::string::npos) << warning;
}

TEST(ProfileTest, TheLayerProfileIsTheSumOverHeads) {
  std::mt19937_64 rng(13);
  const Profile by_head = random_offline_profile(rng);
  const Profile by_layer = profile_by_layer(by_head);
  ASSERT_EQ(by_layer.units.size(), 3u * 2);
  EXPECT_EQ(by_layer.total_values(), by_head.total_values());
  for (std::size_t u = 0; u < by_layer.units.size(); ++u) {
    const UnitProfile& layer_unit = by_layer.units[u];
    EXPECT_EQ(layer_unit.unit.head, -1);
    for (std::size_t c = 0; c < kLadder.size(); ++c) {
      std::uint64_t bytes = 0;
      double first = 0;
      for (const UnitProfile& head_unit : by_head.units) {
        if (head_unit.unit.layer != layer_unit.unit.layer || head_unit.unit.role != layer_unit.unit.role) continue;
        bytes += head_unit.candidates[c].bytes;
        first += head_unit.candidates[c].components[1][1];
      }
      EXPECT_EQ(layer_unit.candidates[c].bytes, bytes);
      EXPECT_DOUBLE_EQ(layer_unit.candidates[c].components[1][1], first);
    }
  }
  Profile model = by_head;
  model.kind = ProfileKind::model;
  EXPECT_THROW((void)profile_by_layer(model), InternalError);
}

}  // namespace
}  // namespace tqlab
