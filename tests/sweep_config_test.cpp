// Sweep configs: defaults, key paths in every error, checks against the data.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "io/json_reader.h"
#include "io_test_util.h"
#include "metrics/cluster_estimate.h"
#include "metrics/quantile.h"
#include "sweep/sweep_config.h"
#include "sweep/sweep_plan.h"
#include "sweep_test_util.h"
#include "test_support.h"

namespace tqlab {
namespace {

using io_test::throws_input_error;
using nlohmann::json;

json minimal() {
  return {{"data", {{"path", "dump.safetensors"}}}, {"grid", {{"k", {"tq:b=3"}}, {"v", {"tq:b=3"}}}}};
}

TEST(SweepConfig, DefaultsAndGridOrder) {
  json config = minimal();
  config["grid"] = {{"k", {"tq:b=3", "tq:b=4"}}, {"v", {"fp16", "q8_0"}}, {"window", {0, 64}}};
  config["runs"] = {{{"k", "tq:b=8"}, {"v", "tq:b=4"}, {"sink", 4}}};
  const SweepConfig parsed = parse_sweep_config(config, "configs/study.json");
  EXPECT_EQ(parsed.name, "study");
  EXPECT_EQ(parsed.data.resolved_path, "configs/dump.safetensors");
  EXPECT_EQ(parsed.seeds, std::vector<std::uint64_t>{0});
  EXPECT_TRUE(parsed.out.empty());
  ASSERT_EQ(parsed.runs.size(), 9u);
  // k outer, then v, window, sink; explicit runs after the grid.
  EXPECT_EQ(parsed.runs[0].k.default_spec, "tq:b=3");
  EXPECT_EQ(parsed.runs[1].window, 64);
  EXPECT_EQ(parsed.runs[2].v.default_spec, "q8_0");
  EXPECT_EQ(parsed.runs[4].k.default_spec, "tq:b=4");
  EXPECT_EQ(parsed.runs[8].k.default_spec, "tq:b=8");
  EXPECT_EQ(parsed.runs[8].sink, 4);
  EXPECT_EQ(parsed.runs[8].origin, "runs[0]");
  const MetricsConfig& metrics = parsed.metrics;
  EXPECT_TRUE(metrics.reconstruction && metrics.attention && metrics.needle);
  EXPECT_EQ(metrics.attention_options.chunk, 2048);
  EXPECT_TRUE(metrics.attention_options.causal);
  EXPECT_FALSE(metrics.attention_options.scale.has_value());
  EXPECT_EQ(metrics.needle_options.trials, 256);
  EXPECT_EQ(metrics.needle_options.margins, (std::vector<double>{0.5, 1, 2, 4}));
}

TEST(SweepConfig, PerLayerAndPerHeadSpecs) {
  json config = minimal();
  config["runs"] = {{{"k", {{"default", "tq:b=3"}, {"layers", {{"0", "tq:b=5"}, {"1", {{"heads", {{"1", "fp16"}}}}}}}}},
                     {"v", "tq:b=3"}}};
  config.erase("grid");
  const SweepConfig parsed = parse_sweep_config(config, "c.json");
  const LayeredSpec& k = parsed.runs[0].k;
  EXPECT_EQ(k.spec_for(0, 0), "tq:b=5");
  EXPECT_EQ(k.spec_for(1, 0), "tq:b=3");
  EXPECT_EQ(k.spec_for(1, 1), "fp16");
  EXPECT_EQ(k.spec_for(7, 1), "tq:b=3");
}

struct BadConfig {
  std::string name;
  std::function<void(json&)> edit;
  std::vector<std::string_view> fragments;
};

class SweepConfigErrors : public ::testing::TestWithParam<BadConfig> {};

// Found by fuzzing (tests/fuzz/sweep_config_fuzz.cpp): a number beyond double made nlohmann
// throw out_of_range, not parse_error, which escaped as an internal error (exit 3).
TEST(SweepConfig, NumberBeyondDoubleIsAnInputError) {
  const std::string message =
      testing::input_error_message([] { (void)parse_json_text(R"({"seeds": [1e400]})", "c.json"); });
  EXPECT_TRUE(message.starts_with("config 'c.json': not valid JSON")) << message;
  EXPECT_NE(message.find("number overflow"), std::string::npos) << message;
}

TEST_P(SweepConfigErrors, NameTheKeyPathAndWhatIsAllowed) {
  json config = minimal();
  GetParam().edit(config);
  const std::string message = testing::input_error_message([&] { (void)parse_sweep_config(config, "c.json"); });
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  EXPECT_TRUE(message.starts_with("config 'c.json': ")) << message;
  for (std::string_view fragment : GetParam().fragments) {
    EXPECT_NE(message.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SweepConfigErrors,
    ::testing::Values(
        BadConfig{"unknown_top_key", [](json& c) { c["metric"] = 1; }, {"unknown key 'metric'", "metrics"}},
        BadConfig{"unknown_nested_key",
                  [](json& c) {
                    c["metrics"] = {{"attention", {{"chunks", 4}}}};
                  },
                  {"metrics.attention.chunks", "chunk, causal"}},
        BadConfig{"bad_spec",
                  [](json& c) {
                    c["grid"]["k"] = {"tq:b=3", "tq:b=4", "tq:b=9"};
                  },
                  {"grid.k[2]", "tq:b=9"}},
        BadConfig{"spec_not_a_string", [](json& c) { c["grid"]["v"] = {3}; }, {"grid.v[0]", "an integer"}},
        BadConfig{"empty_grid_list", [](json& c) { c["grid"]["k"] = json::array(); }, {"grid.k", "empty"}},
        BadConfig{"no_runs", [](json& c) { c.erase("grid"); }, {"no runs"}},
        BadConfig{"missing_v", [](json& c) { c["grid"].erase("v"); }, {"missing key 'grid.v'"}},
        BadConfig{"negative_window",
                  [](json& c) {
                    c["grid"]["window"] = {0, -4};
                  },
                  {"grid.window[1]", "-4"}},
        BadConfig{"window_not_list", [](json& c) { c["grid"]["window"] = 4; }, {"grid.window", "a list"}},
        BadConfig{"data_missing", [](json& c) { c.erase("data"); }, {"no data", "\"data\"", "\"model\""}},
        BadConfig{"template_without_layer", [](json& c) { c["data"]["keys"] = "k"; }, {"data.keys", "{layer}"}},
        BadConfig{"bad_layout", [](json& c) { c["data"]["layout"] = "head tokens dim"; }, {"data.layout", "tokens"}},
        BadConfig{"bad_layers", [](json& c) { c["data"]["layers"] = "0,x"; }, {"data.layers", "'x'"}},
        BadConfig{"bad_nonfinite", [](json& c) { c["data"]["nonfinite"] = "drop"; }, {"data.nonfinite", "error, skip"}},
        // An unknown scoring is refused naming its key, never read as second-half.
        BadConfig{"bad_score",
                  [](json& c) { c["model"] = {{"path", "model"}, {"tokens", "t.npy"}, {"score", "half"}}; },
                  {"model.score", "'half' is not a scoring", "second-half, all"}},
        BadConfig{"scale_word",
                  [](json& c) {
                    c["metrics"] = {{"attention", {{"scale", "sqrt"}}}};
                  },
                  {"metrics.attention.scale", "1/sqrt(d)"}},
        BadConfig{"scale_negative",
                  [](json& c) {
                    c["metrics"] = {{"attention", {{"scale", -1}}}};
                  },
                  {"metrics.attention.scale", "positive"}},
        BadConfig{"chunk_zero",
                  [](json& c) {
                    c["metrics"] = {{"attention", {{"chunk", 0}}}};
                  },
                  {"metrics.attention.chunk", "out of range"}},
        BadConfig{"window_mode",
                  [](json& c) {
                    c["metrics"] = {{"attention", {{"window_mode", "last"}}}};
                  },
                  {"metrics.attention.window_mode", "recent, tail"}},
        BadConfig{"margin_zero",
                  [](json& c) {
                    c["metrics"] = {{"needle", {{"margins", {1, 0}}}}};
                  },
                  {"metrics.needle.margins[1]", "0 < margin"}},
        BadConfig{"family_number",
                  [](json& c) {
                    c["metrics"] = {{"needle", 3}};
                  },
                  {"metrics.needle", "true, false"}},
        BadConfig{"all_off",
                  [](json& c) {
                    c["metrics"] = {{"needle", false}, {"attention", false}, {"reconstruction", false}};
                  },
                  {"metrics", "switched off"}},
        BadConfig{"seed_and_seeds",
                  [](json& c) {
                    c["seed"] = 1;
                    c["seeds"] = {2};
                  },
                  {"\"seeds\"", "not both"}},
        BadConfig{"negative_seed",
                  [](json& c) {
                    c["seeds"] = {1, -2};
                  },
                  {"seeds[1]", "non-negative"}},
        BadConfig{"repeated_seed",
                  [](json& c) {
                    c["seeds"] = {1, 1};
                  },
                  {"seeds", "twice"}},
        BadConfig{"allocation",
                  [](json& c) {
                    c["runs"] = {{{"allocation", "a.json"}}};
                  },
                  {"runs[0].allocation", "allocation 'a.json'", "cannot be read"}},
        BadConfig{"layer_spec_key",
                  [](json& c) {
                    c["runs"] = {{{"k", {{"default", "fp16"}, {"layers", {{"x", "fp16"}}}}}, {"v", "fp16"}}};
                  },
                  {"runs[0].k.layers", "'x'"}},
        BadConfig{"run_spec_object",
                  [](json& c) {
                    c["runs"] = {{{"k", {{"bits", 3}}}, {"v", "fp16"}}};
                  },
                  {"runs[0].k", "unknown key 'runs[0].k.bits'"}},
        BadConfig{"empty_out", [](json& c) { c["out"] = ""; }, {"out", "empty"}}),
    [](const ::testing::TestParamInfo<BadConfig>& info) { return info.param.name; });

class SweepPlanErrors : public ::testing::Test {
 protected:
  void SetUp() override { sweep_test::write_dump(scratch.file("dump.safetensors"), sweep_test::DumpShape{}); }
  ::testing::AssertionResult plan_fails(const json& config, std::initializer_list<std::string_view> fragments) {
    return throws_input_error([&] { (void)plan_sweep(parse_sweep_config(config, scratch.file("c.json"))); }, fragments);
  }
  io_test::ScratchDir scratch;
};

TEST_F(SweepPlanErrors, SpecThatCannotTakeTheHeadDim) {
  json config = minimal();
  config["grid"]["v"] = {"tq:b=3", "q4_0"};
  EXPECT_TRUE(plan_fails(config, {"grid.v[1]", "q4_0", "value head dim 8", "layer 0"}));
}

TEST_F(SweepPlanErrors, TwoRunsWithTheSameIdentity) {
  json config = minimal();
  config["grid"]["k"] = {"tq:b=3", "tq:b=4"};
  config["runs"] = {{{"k", "tq:b=4,block=16"}, {"v", "tq:b=3,rot=hadamard"}}};  // the same at head dim 16 / 8
  EXPECT_TRUE(
      plan_fails(config, {"grid (k[1], v[0], window[0], sink[0])", "runs[0]", "same run", "k=tq:b=4 v=tq:b=3"}));
}

TEST_F(SweepPlanErrors, MissingTensorsNameTheTemplateAndLayer) {
  json config = minimal();
  config["data"]["values"] = "layers.{layer}.value";
  EXPECT_TRUE(plan_fails(config, {"layers.0.value", "layers.{layer}.value"}));
  config = minimal();
  config["data"]["layers"] = {0, 5};
  EXPECT_TRUE(plan_fails(config, {"layer 5", "layers.{layer}.k"}));
}

TEST_F(SweepPlanErrors, MissingDataFileNamesIt) {
  json config = minimal();
  config["data"]["path"] = "nowhere.safetensors";
  EXPECT_TRUE(plan_fails(config, {"nowhere.safetensors"}));
}

TEST_F(SweepPlanErrors, NoQueriesTurnAttentionOffWithOneWarning) {
  json config = minimal();
  config["data"]["queries"] = nullptr;
  const SweepPlan plan = plan_sweep(parse_sweep_config(config, scratch.file("c.json")));
  EXPECT_FALSE(plan.attention);
  EXPECT_FALSE(plan.needle);
  EXPECT_TRUE(plan.synthetic_needle);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("no queries"), std::string::npos);
}

TEST(ClusterEstimate, RatioAndClusterRobustErrorByHand) {
  // Clusters (A, B): (2, 1), (6, 2), (1, 1): R = 9 / 4; residuals A - R B = -0.25, 1.5, -1.25;
  // se^2 = 3/2 * (0.0625 + 2.25 + 1.5625) / 16.
  const std::vector<RatioSum> clusters{{2, 1}, {6, 2}, {1, 1}};
  const ClusterEstimate estimate = cluster_estimate(clusters);
  EXPECT_DOUBLE_EQ(*estimate.value, 2.25);
  EXPECT_DOUBLE_EQ(*estimate.standard_error, std::sqrt(1.5 * 3.875 / 16));
  EXPECT_FALSE(cluster_estimate(std::vector<RatioSum>{{2, 1}}).standard_error.has_value());
  EXPECT_FALSE(cluster_estimate(std::vector<RatioSum>{{0, 0}}).value.has_value());
  const ClusterEstimate root = square_root(ClusterEstimate{4.0, 0.4});
  EXPECT_DOUBLE_EQ(*root.value, 2.0);
  EXPECT_DOUBLE_EQ(*root.standard_error, 0.1);
}

TEST(Quantile, NumpyLinearRule) {
  std::vector<double> values{4, 1, 3, 2, 5};  // sorted 1..5: h = 0.95 * 4 = 3.8 -> 4.8
  EXPECT_DOUBLE_EQ(*quantile(values, 0.95), 4.8);
  std::vector<double> one{7};
  EXPECT_DOUBLE_EQ(*quantile(one, 0.95), 7);
  std::vector<double> none;
  EXPECT_FALSE(quantile(none, 0.95).has_value());
}

TEST(Quantile, UpperQuantileKeepsFivePercentAndAgreesForEveryCount) {
  Rng rng(3);
  std::vector<double> all;
  UpperQuantile streamed(0.95, 1000);
  for (int i = 0; i < 1000; ++i) {
    const double value = std::exp(rng.gaussian());
    all.push_back(value);
    streamed.add(value);
    if (i % 97 == 0 || i == 999) {
      std::vector<double> copy = all;
      EXPECT_DOUBLE_EQ(*streamed.value(), *quantile(copy, 0.95)) << "after " << i + 1;
    }
  }
}

}  // namespace
}  // namespace tqlab
