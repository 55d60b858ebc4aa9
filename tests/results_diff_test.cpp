// `tqlab diff` (src/results/results_diff.h, comparable_results.h): runs matched by
// identity, tolerances, within-SE marking, header/context/warning split, metric
// filters, timing, schema errors; bounds and codebook documents from their real
// writers; the tqlab.diff/1 document.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "quant/codebook.h"
#include "results/results_diff.h"
#include "sweep_test_util.h"
#include "theory/codebook_export.h"
#include "theory/verify_bounds.h"
#include "theory/verify_bounds_json.h"

namespace tqlab {
namespace {

using io_test::throws_input_error;
using Json = nlohmann::ordered_json;

Json metric(double mean, std::optional<double> se, const std::vector<double>& per_seed) {
  Json std_value = nullptr;
  if (per_seed.size() > 1) {
    double sum = 0, squares = 0;
    for (double x : per_seed) sum += x;
    for (double x : per_seed) squares += (x - sum / per_seed.size()) * (x - sum / per_seed.size());
    std_value = std::sqrt(squares / (per_seed.size() - 1));
  }
  return {{"mean", mean}, {"se", se ? Json(*se) : Json(nullptr)}, {"std", std_value}, {"per_seed", per_seed}};
}

std::string run_id(const std::string& k) { return fmt::format("k={} v=tq:b=3 window=0 sink=0", k); }

// A run as tqlab sweep writes it (docs/SWEEP.md), two layers, one seed unless given.
Json make_run(const std::string& k, double bits, double kl, double kl_se = 0.01,
              const std::vector<std::uint64_t>& seeds = {0}) {
  Json run;
  run["id"] = run_id(k);
  run["k"] = k;
  run["v"] = "tq:b=3";
  run["window"] = 0;
  run["sink"] = 0;
  run["seeds"] = seeds;
  run["origin"] = "runs[0]";
  run["bits"] = {
      {"bits_k", bits}, {"bits_v", 3.125}, {"bits_kv", (bits + 3.125) / 2}, {"compression", 32 / (bits + 3.125)}};
  run["metrics"]["k_rel_mse"] = metric(kl / 2, 0.001, {kl / 2});
  run["metrics"]["attn_kl"] = metric(kl, kl_se, {kl});
  run["metrics"]["needle_top1@1"] = metric(0.9, 0.02, {0.9});
  run["per_layer"] = {{"layer", {0, 3}}, {"bits_k", {bits, bits}}, {"k_rel_mse", {kl / 2, kl / 2}},
                      {"attn_kl", {0.9 * kl, 1.1 * kl}}, {"needle_top1@1", {0.9, 0.9}}};
  return run;
}

Json make_sweep(const std::vector<Json>& runs) {
  Json config_runs = Json::array();
  for (const Json& run : runs) config_runs.push_back({{"k", run["k"]}, {"v", run["v"]}});
  return {{"schema", "tqlab.sweep/1"},
          {"tqlab", {{"version", "0.1.0"}, {"git_commit", "abc"}, {"blas", "OpenBLAS Haswell"}}},
          {"config",
           {{"name", "study"},
            {"data", {{"path", "../data/kv.safetensors"}, {"layers", {0, 3}}}},
            {"runs", config_runs},
            {"metrics", {{"needle", {{"trials", 8}}}}},
            {"seeds", {0}}}},
          {"data", {{"path", "../data/kv.safetensors"}, {"bytes", 1000}, {"sha256", "aa11"}}},
          {"needle", {{"trials", 8}, {"margins", {1.0}}}},
          {"runs", runs},
          {"timing", {{"total_seconds", 1.5}}}};
}

Json two_runs() { return make_sweep({make_run("tq:b=2", 2.125, 0.2), make_run("tq:b=3", 3.125, 0.05)}); }

DiffResult diff(const Json& a, const Json& b, const DiffOptions& options = {}) {
  return diff_documents(comparable_document(a, "a.json", options.timing),
                        comparable_document(b, "b.json", options.timing), options);
}

const RowDiff* find_row(const DiffResult& result, const std::string& key) {
  for (const RowDiff& row : result.rows) {
    if (row.key == key) return &row;
  }
  return nullptr;
}

const QuantityDiff* find_quantity(const DiffResult& result, const std::string& key, const std::string& name) {
  const RowDiff* row = find_row(result, key);
  if (row == nullptr) return nullptr;
  for (const QuantityDiff& quantity : row->quantities) {
    if (quantity.name == name) return &quantity;
  }
  return nullptr;
}

TEST(ResultsDiffTest, IdenticalDocumentsHaveNoDifference) {
  const DiffResult result = diff(two_runs(), two_runs());
  EXPECT_FALSE(result.differs());
  EXPECT_EQ(result.exit_code(), kExitOk);
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_EQ(result.count_rows(DiffStatus::same), 2u);
  EXPECT_TRUE(result.header.empty());
  EXPECT_TRUE(result.context.empty());
  // Each run's bits and metrics are quantities; per-layer values are the metric's details.
  const QuantityDiff* kl = find_quantity(result, run_id("tq:b=2") + " seeds=0", "attn_kl");
  ASSERT_NE(kl, nullptr);
  EXPECT_EQ(kl->status, DiffStatus::same);
  // se, std, 1 per-seed value, 2 per-layer values.
  EXPECT_EQ(kl->details_compared, 5u);
  EXPECT_NE(find_quantity(result, run_id("tq:b=2") + " seeds=0", "bits_kv"), nullptr);
  EXPECT_NE(diff_text(result).find("no difference"), std::string::npos) << diff_text(result);
}

TEST(ResultsDiffTest, RunsMatchByIdentityNotPosition) {
  Json reordered = two_runs();
  std::swap(reordered["runs"][0], reordered["runs"][1]);
  reordered["runs"][0]["origin"] = "runs[1]";
  const DiffResult result = diff(two_runs(), reordered);
  EXPECT_FALSE(result.differs());
  // The origin moved: context, reported and not counted.
  ASSERT_NE(find_row(result, run_id("tq:b=3") + " seeds=0"), nullptr);
  EXPECT_EQ(find_row(result, run_id("tq:b=3") + " seeds=0")->context.size(), 1u);
  EXPECT_NE(diff_text(result).find("origin"), std::string::npos);
}

TEST(ResultsDiffTest, ChangeBeyondToleranceIsReportedWithAbsoluteAndRelativeChange) {
  Json changed = two_runs();
  changed["runs"][1]["metrics"]["attn_kl"]["mean"] = 0.08;
  const DiffResult result = diff(two_runs(), changed);
  EXPECT_TRUE(result.differs());
  EXPECT_EQ(result.exit_code(), kExitDifference);
  const QuantityDiff* kl = find_quantity(result, run_id("tq:b=3") + " seeds=0", "attn_kl");
  ASSERT_NE(kl, nullptr);
  EXPECT_EQ(kl->status, DiffStatus::differs);
  EXPECT_NEAR(*kl->abs_change, 0.03, 1e-15);
  EXPECT_NEAR(*kl->rel_change, 0.6, 1e-12);
  EXPECT_NEAR(*kl->combined_se, std::sqrt(2) * 0.01, 1e-15);
  EXPECT_EQ(find_row(result, run_id("tq:b=2") + " seeds=0")->status, DiffStatus::same);
  const std::string text = diff_text(result);
  EXPECT_NE(text.find("attn_kl"), std::string::npos) << text;
  EXPECT_NE(text.find("+60%"), std::string::npos) << text;
  EXPECT_EQ(text.find("k_rel_mse"), std::string::npos) << "unchanged quantities are not listed:\n" << text;
}

TEST(ResultsDiffTest, TolerancesDecideWhatIsADifference) {
  const auto with_kl = [](double kl) {
    Json document = two_runs();
    document["runs"][0]["metrics"]["attn_kl"]["mean"] = kl;
    return document;
  };
  DiffOptions options;  // rtol 1e-9, atol 1e-12: the threshold is 1e-9 of the larger magnitude
  EXPECT_FALSE(diff(with_kl(0.2), with_kl(0.2 * (1 + 0.9e-9)), options).differs());
  EXPECT_TRUE(diff(with_kl(0.2), with_kl(0.2 * (1 + 1.1e-9)), options).differs());
  options.rtol = 1e-6;
  EXPECT_FALSE(diff(with_kl(0.2), with_kl(0.2 * (1 + 0.9e-6)), options).differs());
  EXPECT_TRUE(diff(with_kl(0.2), with_kl(0.2 * (1 + 1.1e-6)), options).differs());
  options.rtol = 0;
  options.atol = 0;
  EXPECT_TRUE(diff(with_kl(0.2), with_kl(std::nextafter(0.2, 1.0)), options).differs());
  // Near zero the absolute tolerance decides.
  options = DiffOptions{};
  EXPECT_FALSE(diff(with_kl(0), with_kl(0.9e-12), options).differs());
  EXPECT_TRUE(diff(with_kl(0), with_kl(1.1e-12), options).differs());
  const DiffResult from_zero = diff(with_kl(0), with_kl(5e-12), options);
  EXPECT_FALSE(find_quantity(from_zero, run_id("tq:b=2") + " seeds=0", "attn_kl")->rel_change.has_value());
  // Null equals only null.
  EXPECT_TRUE(diff(with_kl(0.2), [&] {
                Json document = with_kl(0.2);
                document["runs"][0]["metrics"]["attn_kl"]["mean"] = nullptr;
                return document;
              }(), options).differs());
  options.rtol = -1;
  EXPECT_TRUE(throws_input_error([&] { diff(two_runs(), two_runs(), options); }, {"--rtol"}));
}

TEST(ResultsDiffTest, ChangeWithinCombinedStandardErrorIsMarkedAndCountsUnlessIgnored) {
  // se 0.01 in both files: combined sqrt(2) * 0.01 = 0.01414.
  Json near = two_runs(), far = two_runs();
  near["runs"][0]["metrics"]["attn_kl"]["mean"] = 0.2 + 0.0141;
  far["runs"][0]["metrics"]["attn_kl"]["mean"] = 0.2 + 0.0142;
  const std::string key = run_id("tq:b=2") + " seeds=0";
  DiffResult result = diff(two_runs(), near);
  EXPECT_EQ(find_quantity(result, key, "attn_kl")->status, DiffStatus::within_se);
  EXPECT_EQ(find_row(result, key)->status, DiffStatus::within_se);
  EXPECT_EQ(result.exit_code(), kExitDifference) << "within-SE changes count by default";
  EXPECT_NE(diff_text(result).find(" ~"), std::string::npos) << diff_text(result);
  DiffOptions lenient;
  lenient.ignore_within_se = true;
  EXPECT_EQ(diff(two_runs(), near, lenient).exit_code(), kExitOk);
  EXPECT_EQ(find_quantity(diff(two_runs(), far), key, "attn_kl")->status, DiffStatus::differs);
  EXPECT_EQ(diff(two_runs(), far, lenient).exit_code(), kExitDifference);
  // Without an se on one side nothing is within it.
  near["runs"][0]["metrics"]["attn_kl"]["se"] = nullptr;
  EXPECT_EQ(find_quantity(diff(two_runs(), near), key, "attn_kl")->status, DiffStatus::differs);
}

TEST(ResultsDiffTest, DetailChangeUnderAnEqualMeanIsADifference) {
  Json changed = two_runs();
  changed["runs"][0]["per_layer"]["attn_kl"][1] = 0.25;
  const DiffResult result = diff(two_runs(), changed);
  const QuantityDiff* kl = find_quantity(result, run_id("tq:b=2") + " seeds=0", "attn_kl");
  ASSERT_NE(kl, nullptr);
  EXPECT_EQ(kl->status, DiffStatus::differs);
  EXPECT_FALSE(kl->headline_differs);
  ASSERT_EQ(kl->detail_differences.size(), 1u);
  EXPECT_EQ(kl->detail_differences[0].path, "per_layer.attn_kl[layer=3]");
  EXPECT_NE(diff_text(result).find("per_layer.attn_kl[layer=3]"), std::string::npos) << diff_text(result);
}

TEST(ResultsDiffTest, RunsInOneFileAndSeedListsAreListed) {
  Json more = make_sweep({make_run("tq:b=2", 2.125, 0.2), make_run("tq:b=4", 4.125, 0.01)});
  const DiffResult result = diff(two_runs(), more);
  EXPECT_EQ(find_row(result, run_id("tq:b=3") + " seeds=0")->status, DiffStatus::only_a);
  EXPECT_EQ(find_row(result, run_id("tq:b=4") + " seeds=0")->status, DiffStatus::only_b);
  EXPECT_EQ(result.exit_code(), kExitDifference);
  const std::string text = diff_text(result);
  EXPECT_NE(text.find("runs only in A (1)"), std::string::npos) << text;
  EXPECT_NE(text.find("runs only in B (1)"), std::string::npos) << text;
  // The seed list is part of a run's identity.
  Json seeds = make_sweep({make_run("tq:b=2", 2.125, 0.2, 0.01, {0, 1}), make_run("tq:b=3", 3.125, 0.05)});
  const DiffResult reseeded = diff(two_runs(), seeds);
  EXPECT_EQ(find_row(reseeded, run_id("tq:b=2") + " seeds=0")->status, DiffStatus::only_a);
  EXPECT_EQ(find_row(reseeded, run_id("tq:b=2") + " seeds=0,1")->status, DiffStatus::only_b);
  // A run listed twice cannot be matched.
  Json twice = make_sweep({make_run("tq:b=2", 2.125, 0.2), make_run("tq:b=2", 2.125, 0.2)});
  EXPECT_TRUE(throws_input_error([&] { diff(twice, two_runs()); }, {"a.json", "runs[1]", "twice"}));
}

TEST(ResultsDiffTest, ConfigAndDataDifferencesComeFirstAndContextIsNotADifference) {
  Json moved = two_runs();
  moved["tqlab"]["git_commit"] = "def";
  moved["tqlab"]["version"] = "0.2.0";
  moved["tqlab"]["blas"] = "OpenBLAS SkylakeX";
  moved["config"]["data"]["path"] = "kv.safetensors";
  moved["data"]["path"] = "kv.safetensors";
  moved["config"]["name"] = "renamed";
  DiffResult result = diff(two_runs(), moved);
  EXPECT_FALSE(result.differs());
  EXPECT_EQ(result.context.size(), 6u);
  EXPECT_TRUE(result.warnings.empty());

  Json other = two_runs();
  other["config"]["metrics"]["needle"]["trials"] = 16;
  other["data"]["sha256"] = "bb22";
  result = diff(two_runs(), other);
  EXPECT_TRUE(result.differs());
  ASSERT_EQ(result.header.size(), 2u);
  EXPECT_EQ(result.header[0].path, "config.metrics.needle.trials");
  EXPECT_EQ(result.header[1].path, "data.sha256");
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("aa11"), std::string::npos);
  const std::string text = diff_text(result);
  EXPECT_LT(text.find("WARNING: the data differ"), text.find("config.metrics.needle.trials")) << text;
  // The config's run list is compared run by run, not as a header leaf.
  Json more = make_sweep({make_run("tq:b=2", 2.125, 0.2), make_run("tq:b=3", 3.125, 0.05), make_run("q4_0", 4.5, 0.1)});
  for (const LeafDiff& leaf : diff(two_runs(), more).header)
    EXPECT_FALSE(leaf.path.starts_with("config.runs")) << leaf.path;
}

TEST(ResultsDiffTest, TimingIsIgnoredUnlessAskedFor) {
  Json slower = two_runs();
  slower["timing"]["total_seconds"] = 9.0;
  EXPECT_FALSE(diff(two_runs(), slower).differs());
  DiffOptions options;
  options.timing = true;
  const DiffResult result = diff(two_runs(), slower, options);
  EXPECT_TRUE(result.differs());
  ASSERT_EQ(result.header.size(), 1u);
  EXPECT_EQ(result.header[0].path, "timing.total_seconds");
}

TEST(ResultsDiffTest, MetricFilterRestrictsAndAnUnknownNameIsAnError) {
  Json changed = two_runs();
  changed["runs"][0]["metrics"]["k_rel_mse"]["mean"] = 0.5;
  DiffOptions options;
  options.metrics = {"attn_kl"};
  DiffResult result = diff(two_runs(), changed, options);
  EXPECT_FALSE(result.differs());
  for (const RowDiff& row : result.rows) {
    ASSERT_EQ(row.quantities.size(), 1u);
    EXPECT_EQ(row.quantities[0].name, "attn_kl");
  }
  options.metrics = {"attn_kl", "k_rel_mse"};
  EXPECT_TRUE(diff(two_runs(), changed, options).differs());
  // A name selects its variants after '@', '.' or '['.
  options.metrics = {"needle_top1"};
  result = diff(two_runs(), changed, options);
  ASSERT_EQ(result.rows[0].quantities.size(), 1u);
  EXPECT_EQ(result.rows[0].quantities[0].name, "needle_top1@1");
  EXPECT_TRUE(quantity_matches("theorem1.upper_bound", "theorem1"));
  EXPECT_FALSE(quantity_matches("attn_kl_p95", "attn_kl"));
  options.metrics = {"atn_kl"};
  EXPECT_TRUE(
      throws_input_error([&] { diff(two_runs(), changed, options); }, {"--metric 'atn_kl'", "a.json", "attn_kl"}));
}

TEST(ResultsDiffTest, SchemasMustBeKnownAndTheSame) {
  Json codebook = {{"schema", "tqlab.codebook/1"}, {"dim", 8}, {"bits", 1}, {"distribution", "beta"}};
  EXPECT_TRUE(throws_input_error(
      [&] { diff(two_runs(), codebook); }, {"a.json", "tqlab.sweep/1", "b.json", "tqlab.codebook/1", "one schema"}));
  Json unknown = {{"schema", "tqlab.sweep/9"}, {"runs", Json::array()}};
  EXPECT_TRUE(throws_input_error([&] { comparable_document(unknown, "u.json", false); }, {"u.json", "tqlab.sweep/9"}));
  Json no_runs = {{"schema", "tqlab.sweep/1"}};
  EXPECT_TRUE(throws_input_error([&] { comparable_document(no_runs, "n.json", false); }, {"n.json", "runs"}));
  Json no_id = two_runs();
  no_id["runs"][1].erase("id");
  EXPECT_TRUE(throws_input_error([&] { comparable_document(no_id, "i.json", false); }, {"i.json", "runs[1]", "id"}));

  io_test::ScratchDir scratch;
  std::ofstream(scratch.file("broken.json")) << "{\"schema\": ";
  std::ofstream(scratch.file("list.json")) << "[1, 2]";
  std::ofstream(scratch.file("plain.json")) << "{\"runs\": []}";
  std::ofstream(scratch.file("good.json")) << two_runs().dump();
  const DiffOptions options;
  EXPECT_TRUE(
      throws_input_error([&] { diff_results_files(scratch.file("broken.json"), scratch.file("good.json"), options); },
                         {"broken.json", "not valid JSON"}));
  EXPECT_TRUE(
      throws_input_error([&] { diff_results_files(scratch.file("good.json"), scratch.file("list.json"), options); },
                         {"list.json", "object"}));
  EXPECT_TRUE(
      throws_input_error([&] { diff_results_files(scratch.file("plain.json"), scratch.file("good.json"), options); },
                         {"plain.json", "schema"}));
  EXPECT_TRUE(
      throws_input_error([&] { diff_results_files(scratch.file("none.json"), scratch.file("good.json"), options); },
                         {"none.json", "cannot be read"}));
  EXPECT_FALSE(diff_results_files(scratch.file("good.json"), scratch.file("good.json"), options).differs());
}

TEST(ResultsDiffTest, DiffJsonIsATqlabDiffDocument) {
  Json changed = two_runs();
  changed["runs"][1]["metrics"]["attn_kl"]["mean"] = 0.051;
  const DiffResult result = diff(two_runs(), changed);
  const nlohmann::ordered_json document = diff_json(result);
  const Json parsed = Json::parse(document.dump());
  EXPECT_EQ(parsed["schema"], "tqlab.diff/1");
  EXPECT_EQ(parsed["exit_code"], 1);
  EXPECT_EQ(parsed["a"]["path"], "a.json");
  EXPECT_EQ(parsed["summary"]["rows"]["within_se"], 1);
  EXPECT_EQ(parsed["summary"]["rows"]["same"], 1);
  bool found = false;
  for (const Json& row : parsed["rows"]) {
    for (const Json& quantity : row["quantities"]) {
      if (row["key"] == run_id("tq:b=3") + " seeds=0" && quantity["name"] == "attn_kl") {
        found = true;
        EXPECT_EQ(quantity["status"], "within_se");
        EXPECT_DOUBLE_EQ(quantity["a"].get<double>(), 0.05);
        EXPECT_DOUBLE_EQ(quantity["b"].get<double>(), 0.051);
      }
    }
  }
  EXPECT_TRUE(found);
}

// A sweep document from the real writer, with per-head tables, a per-layer K spec and two seeds.
TEST(ResultsDiffTest, RealSweepResultsCompareEveryPerSeedPerLayerAndPerHeadValue) {
  io_test::ScratchDir scratch;
  sweep_test::write_dump(scratch.file("dump.safetensors"), sweep_test::DumpShape{2, 1, 2, 4, 24, 16, 8});
  const nlohmann::json config = {
      {"data", {{"path", "dump.safetensors"}}},
      {"runs",
       {{{"k", "tq:b=3"}, {"v", "tq:b=2"}},
        {{"k", {{"default", "tq:b=2"}, {"layers", {{"1", "tq:b=4"}}}}}, {"v", "fp8_e4m3"}}}},
      {"seeds", {0, 1}},
      {"metrics",
       {{"attention", {{"chunk", 12}}}, {"needle", {{"trials", 4}, {"synth_trials", 1}}}, {"per_head", true}}}};
  const sweep_test::SweepRun sweep = sweep_test::run_config(config, scratch.file("c.json"));
  const Json document = Json::parse(sweep_results_json(sweep.plan, sweep.results, DataIdentity{1, "ab"}).dump());
  const DiffResult same = diff(document, document);
  EXPECT_FALSE(same.differs());
  ASSERT_EQ(same.rows.size(), 2u);
  EXPECT_EQ(same.rows[0].key, "k=tq:b=3 v=tq:b=2 window=0 sink=0 seeds=0,1");
  EXPECT_NE(same.rows[1].key.find("\"layers\""), std::string::npos) << same.rows[1].key;
  // attn_kl: se, std, 2 per-seed values, 2 per-layer values, 2 layers x 4 query heads.
  const QuantityDiff* kl = find_quantity(same, same.rows[0].key, "attn_kl");
  ASSERT_NE(kl, nullptr);
  EXPECT_EQ(kl->details_compared, 14u);

  Json changed = document;
  changed["runs"][1]["per_head"]["attn_kl"][1][2] =
      changed["runs"][1]["per_head"]["attn_kl"][1][2].get<double>() * 1.01;
  const DiffResult moved = diff(document, changed);
  EXPECT_TRUE(moved.differs());
  const QuantityDiff* head = find_quantity(moved, same.rows[1].key, "attn_kl");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->status, DiffStatus::differs);
  ASSERT_EQ(head->detail_differences.size(), 1u);
  EXPECT_EQ(head->detail_differences[0].path, "per_head.attn_kl[layer=1][2]");
}

// Schema 1 wrote the published reproduction's values as seed001 / seed001_z and named its checks
// seed001.*: such a file compares with one of schema 2, field by field, and a changed value shows.
Json as_bounds_version1(const Json& value) {
  if (value.is_object()) {
    Json out = Json::object();
    for (const auto& [key, member] : value.items()) {
      std::string name = key == "reproduction" ? "seed001" : key == "reproduction_z" ? "seed001_z" : key;
      if (key == "name" && member.is_string() && member.get<std::string>().starts_with("reproduction.")) {
        out[name] = "seed001." + member.get<std::string>().substr(13);
      } else if (key == "schema") {
        out[name] = "tqlab.bounds/1";
      } else {
        out[name] = as_bounds_version1(member);
      }
    }
    return out;
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& element : value) out.push_back(as_bounds_version1(element));
    return out;
  }
  return value;
}

TEST(ResultsDiffTest, BoundsSchemaOneComparesWithSchemaTwoAcrossTheRename) {
  VerifyBoundsOptions options;
  options.dims = {128};
  options.bits = {2};
  options.samples = options.inner_product_samples = 200;
  options.rotation_samples = 0;
  options.histogram_bins = 8;
  const Json current = Json::parse(bounds_report_json(verify_bounds(options)).dump());
  ASSERT_EQ(current["schema"], "tqlab.bounds/2");
  Json old = as_bounds_version1(current);
  ASSERT_EQ(old["schema"], "tqlab.bounds/1");
  ASSERT_TRUE(old["rows"][0]["inner_products"][0]["biased"].contains("seed001"));
  const DiffResult same = diff(old, current);
  EXPECT_FALSE(same.differs()) << diff_text(same);
  EXPECT_NE(find_quantity(same, "dim=128 bits=2", "inner_products[inner_product=0].biased.reproduction"), nullptr);
  EXPECT_NE(find_quantity(same, "dim=128 bits=2", "checks[name=reproduction.d_mse].value"), nullptr);
  old["rows"][0]["inner_products"][0]["biased"]["seed001_z"] = 99.0;
  const DiffResult moved = diff(old, current);
  EXPECT_TRUE(moved.differs());
  EXPECT_NE(find_quantity(moved, "dim=128 bits=2", "inner_products[inner_product=0].biased.reproduction_z"), nullptr);
}

// Bounds documents from the real writer: rows by (dim, bits), checks by name, histograms joined.
TEST(ResultsDiffTest, BoundsDocumentsMatchRowsByDimAndBits) {
  VerifyBoundsOptions options;
  options.dims = {16};
  options.bits = {1, 2};
  options.samples = options.inner_product_samples = 200;
  options.rotation_samples = 0;
  options.histogram_bins = 8;
  const Json a = Json::parse(bounds_report_json(verify_bounds(options)).dump());
  Json rerun = Json::parse(bounds_report_json(verify_bounds(options)).dump());
  const DiffResult same = diff(a, rerun);
  EXPECT_FALSE(same.differs()) << diff_text(same);  // timing.seconds differs and is left out
  ASSERT_EQ(same.rows.size(), 2u);
  EXPECT_EQ(same.rows[0].key, "dim=16 bits=1");
  const auto names = [](const RowDiff& row) {
    std::vector<std::string> out;
    for (const QuantityDiff& quantity : row.quantities) out.push_back(quantity.name);
    return out;
  };
  const std::vector<std::string> row_names = names(same.rows[1]);
  for (const char* expected : {"d_mse_theory", "d_mse_empirical", "theorem1.upper_bound",
                               "checks[name=d_mse_empirical].value", "histograms[estimator=biased].overall.counts",
                               "inner_products[inner_product=0.5].prod.scaled_mse"}) {
    EXPECT_NE(std::find(row_names.begin(), row_names.end(), expected), row_names.end()) << expected;
  }
  // Rows in another order still match; another seed moves the Monte Carlo values only.
  std::swap(rerun["rows"][0], rerun["rows"][1]);
  EXPECT_FALSE(diff(a, rerun).differs());
  options.seed = 1;
  const Json reseeded = Json::parse(bounds_report_json(verify_bounds(options)).dump());
  const DiffResult moved = diff(a, reseeded);
  EXPECT_TRUE(moved.differs());
  EXPECT_TRUE(std::any_of(moved.header.begin(), moved.header.end(),
                          [](const LeafDiff& leaf) { return leaf.path == "settings.seed"; }));
  const QuantityDiff* theory = find_quantity(moved, "dim=16 bits=2", "d_mse_theory");
  const QuantityDiff* empirical = find_quantity(moved, "dim=16 bits=2", "d_mse_empirical");
  ASSERT_NE(theory, nullptr);
  ASSERT_NE(empirical, nullptr);
  EXPECT_EQ(theory->status, DiffStatus::same);
  EXPECT_NE(empirical->status, DiffStatus::same);
  EXPECT_TRUE(empirical->combined_se.has_value()) << "standard_error is the se of a bounds estimate";
}

TEST(ResultsDiffTest, CodebookDocumentsMatchByDimBitsAndDistribution) {
  const Codebook& two = lloyd_max_codebook(16, 2, CodebookDistribution::beta);
  const Codebook& three = lloyd_max_codebook(16, 3, CodebookDistribution::beta);
  const Json one = Json::parse(codebook_text(CodebookFormat::json, {&two}));
  const Json both = Json::parse(codebook_text(CodebookFormat::json, {&three, &two}));
  const DiffResult result = diff(one, both);
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_EQ(result.rows[0].key, "dim=16 bits=2 distribution=beta");
  EXPECT_EQ(result.rows[0].status, DiffStatus::same);
  EXPECT_EQ(result.rows[1].status, DiffStatus::only_b);
  Json shifted = one;
  shifted["centroids"][1] = shifted["centroids"][1].get<double>() + 1e-6;
  const DiffResult moved = diff(one, shifted);
  const QuantityDiff* centroids = find_quantity(moved, "dim=16 bits=2 distribution=beta", "centroids");
  ASSERT_NE(centroids, nullptr);
  EXPECT_FALSE(centroids->has_headline);
  EXPECT_EQ(centroids->status, DiffStatus::differs);
  ASSERT_EQ(centroids->detail_differences.size(), 1u);
  EXPECT_EQ(centroids->detail_differences[0].path, "centroids[1]");
  Json other_version = one;
  other_version["tqlab_version"] = "9.9.9";
  EXPECT_FALSE(diff(one, other_version).differs());
}

}  // namespace
}  // namespace tqlab
