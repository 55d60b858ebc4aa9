// `tqlab report` (src/results/results_report.h, sweep_results_reader.h): the
// Pareto front and best-at-budget marks against hand-worked cases, table order,
// mean ± se formatting, Markdown and CSV, default and unknown metrics.
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "results/results_report.h"
#include "sweep_test_util.h"

namespace tqlab {
namespace {

using io_test::throws_input_error;
using Json = nlohmann::ordered_json;

struct RunSpec {
  std::string k;
  double bits_kv;
  std::optional<double> kl;
  std::vector<std::uint64_t> seeds = {0};
};

Json make_run(const RunSpec& spec) {
  Json run;
  run["id"] = fmt::format("k={} v=tq:b=3 window=0 sink=0", spec.k);
  run["k"] = spec.k;
  run["v"] = "tq:b=3";
  run["window"] = 0;
  run["sink"] = 0;
  run["seeds"] = spec.seeds;
  run["bits"] = {{"bits_k", spec.bits_kv}, {"bits_v", spec.bits_kv}, {"bits_kv", spec.bits_kv},
                 {"bits_kv_effective", spec.bits_kv}, {"compression", 16 / spec.bits_kv}};
  const bool several = spec.seeds.size() > 1;
  run["metrics"]["k_rel_mse"] = {{"mean", 0.1}, {"se", 0.002}, {"std", several ? Json(0.003) : Json(nullptr)}};
  run["metrics"]["attn_kl"] = {{"mean", spec.kl ? Json(*spec.kl) : Json(nullptr)},
                               {"se", spec.kl ? Json(0.001) : Json(nullptr)},
                               {"std", nullptr}};
  run["metrics"]["attn_top1"] = {{"mean", 0.97}, {"se", 0.004}, {"std", nullptr}};
  for (const char* margin : {"0.5", "1", "2", "4", "10"}) {
    run["metrics"][fmt::format("needle_top1@{}", margin)] = {{"mean", 0.8}, {"se", nullptr}, {"std", nullptr}};
  }
  return run;
}

// Writes a tqlab.sweep/1 document with these runs and reads it back.
class ReportTest : public ::testing::Test {
 protected:
  SweepResultsFile results(const std::vector<RunSpec>& runs) {
    Json document = {{"schema", "tqlab.sweep/1"}, {"config", {{"name", "t"}}}, {"runs", Json::array()}};
    for (const RunSpec& run : runs) document["runs"].push_back(make_run(run));
    const std::string path = scratch_.file("results.json");
    std::ofstream(path) << document.dump();
    return read_sweep_results(path);
  }
  io_test::ScratchDir scratch_;
};

std::vector<std::string> order(const std::vector<ReportRow>& rows) {
  std::vector<std::string> out;
  for (const ReportRow& row : rows) out.push_back(row.run->k);
  return out;
}

std::vector<std::string> marked(const std::vector<ReportRow>& rows, bool ReportRow::*mark) {
  std::vector<std::string> out;
  for (const ReportRow& row : rows) {
    if (row.*mark) out.push_back(row.run->k);
  }
  return out;
}

TEST_F(ReportTest, ParetoFrontAndBestAtEachBudgetByHand) {
  // bits, attn_kl:  a 2/0.30  b 3/0.10  c 3/0.05  d 4/0.07  e 4/0.02  f 5/0.02  g 2.5/none.
  // Front: a (nothing has fewer bits), c (only a and b have <= 3 bits, both higher), e (lowest
  // of all at <= 4 bits), f (e's 0.02 is not lower than f's 0.02). Off it: b (c at equal bits is
  // lower), d (c has fewer bits and is lower), g (not measured).
  const SweepResultsFile file = results({{"a", 2, 0.30}, {"b", 3, 0.10}, {"c", 3, 0.05}, {"d", 4, 0.07},
                                         {"e", 4, 0.02}, {"f", 5, 0.02}, {"g", 2.5, std::nullopt}});
  const std::vector<ReportRow> rows = report_rows(file);
  EXPECT_EQ(order(rows), (std::vector<std::string>{"a", "g", "c", "b", "e", "d", "f"}));
  EXPECT_EQ(marked(rows, &ReportRow::pareto_front), (std::vector<std::string>{"a", "c", "e", "f"}));
  EXPECT_EQ(marked(rows, &ReportRow::best_at_bits), (std::vector<std::string>{"a", "c", "e", "f"}));
  // A run with more bits and a strictly lower kl than every cheaper one is on the front,
  // and one that is dominated is not, even if it is alone at its budget.
  const SweepResultsFile pair = results({{"x", 3, 0.1}, {"y", 4, 0.2}});
  const std::vector<ReportRow> two = report_rows(pair);
  EXPECT_EQ(marked(two, &ReportRow::pareto_front), (std::vector<std::string>{"x"}));
  EXPECT_EQ(marked(two, &ReportRow::best_at_bits), (std::vector<std::string>{"x", "y"}));
}

TEST(ReportFormatTest, MeanAndStandardError) {
  EXPECT_EQ(format_mean_se(0.19237787, 0.022049), "0.192 ± 0.022");
  EXPECT_EQ(format_mean_se(0.96817, 0.0056), "0.9682 ± 0.0056");
  EXPECT_EQ(format_mean_se(1234.5678, 12.3), "1235 ± 12");
  EXPECT_EQ(format_mean_se(0.031, 0.0021, 0.0034), "0.0310 ± 0.0021 (sd 0.0034)");
  EXPECT_EQ(format_mean_se(3.759e-5, 2.4e-7), "(3.759 ± 0.024)e-05");
  EXPECT_EQ(format_mean_se(0.00171, 0.000065), "0.001710 ± 0.000065");
  EXPECT_EQ(format_mean_se(3.125, std::nullopt), "3.125");
  EXPECT_EQ(format_mean_se(std::nullopt, 0.1), "–");
  // An se far below the mean's precision: six significant digits, not twenty.
  EXPECT_EQ(format_mean_se(0.123456789, 1e-12), "0.123457 ± 1e-12");
}

TEST_F(ReportTest, MarkdownTableHasTheDefaultColumnsMarksAndNulls) {
  const SweepResultsFile file = results({{"tq:b=3,nc", 3.125, 0.031}, {"tq:b=2", 2.625, std::nullopt}});
  EXPECT_EQ(file.middle_needle_metric(), "needle_top1@2") << "margins 0.5 1 2 4 10: the middle by value";
  EXPECT_EQ(default_report_metrics(file),
            (std::vector<std::string>{"bits_kv", "compression", "k_rel_mse", "attn_kl", "attn_top1", "needle_top1@2"}));
  const std::string table = report_text(file, {});
  const std::vector<std::string> expected = {
      "| k         | v      | bits_kv | compression |       k_rel_mse |         attn_kl |       attn_top1 | "
      "needle_top1@2 | front | best |",
      "| tq:b=2    | tq:b=3 |   2.625 |       6.095 | 0.1000 ± 0.0020 |               – | 0.9700 ± 0.0040 | "
      "          0.8 | –     | –    |",
      "| tq:b=3,nc | tq:b=3 |   3.125 |        5.12 | 0.1000 ± 0.0020 | 0.0310 ± 0.0010 | 0.9700 ± 0.0040 | "
      "          0.8 | ✓     | ✓    |"};
  for (const std::string& line : expected) EXPECT_NE(table.find(line), std::string::npos) << line << "\n" << table;
  EXPECT_NE(table.find("| --------- | ------ | ------: | ----------: |"), std::string::npos) << table;
  EXPECT_NE(table.find("Pareto front of bits_kv vs attn_kl"), std::string::npos) << table;
}

TEST_F(ReportTest, CsvHasFullPrecisionErrorsQuotingAndMarks) {
  const SweepResultsFile file = results({{"tq:b=3,nc", 3.125, 0.031, {0, 1}}, {"q4_0", 4.5, 0.04, {0, 1}}});
  ReportOptions options;
  options.format = ReportFormat::csv;
  options.metrics = {"bits_kv", "k_rel_mse", "attn_kl"};
  const std::string table = report_text(file, options);
  EXPECT_EQ(table,
            "k,v,window,sink,seeds,bits_kv,k_rel_mse,k_rel_mse_se,k_rel_mse_std,attn_kl,attn_kl_se,attn_kl_std,"
            "pareto_front,best_at_bits\n"
            "\"tq:b=3,nc\",tq:b=3,0,0,0 1,3.125,0.1,0.002,0.003,0.031,0.001,–,true,true\n"
            "q4_0,tq:b=3,0,0,0 1,4.5,0.1,0.002,0.003,0.04,0.001,–,false,true\n");
}

// The real writer's document: a per-layer K spec is shown as its JSON (quoted in CSV), and the
// two seeds add the sd.
TEST_F(ReportTest, RealSweepResultsWithAPerLayerSpec) {
  sweep_test::write_dump(scratch_.file("dump.safetensors"), sweep_test::DumpShape{2, 1, 2, 4, 24, 16, 8});
  const nlohmann::json config = {
      {"data", {{"path", "dump.safetensors"}}},
      {"runs",
       {{{"k", "tq:b=3"}, {"v", "tq:b=2"}},
        {{"k", {{"default", "tq:b=2"}, {"layers", {{"1", "tq:b=4"}}}}}, {"v", "fp8_e4m3"}}}},
      {"seeds", {0, 1}},
      {"metrics", {{"attention", {{"chunk", 12}}}, {"needle", {{"trials", 4}, {"synth_trials", 1}}}}}};
  const sweep_test::SweepRun sweep = sweep_test::run_config(config, scratch_.file("c.json"));
  const std::string path = scratch_.file("real.json");
  std::ofstream(path) << sweep_results_json(sweep.plan, sweep.results, DataIdentity{1, "ab"}).dump(1);
  const SweepResultsFile file = read_sweep_results(path);
  ASSERT_EQ(file.runs.size(), 2u);
  const std::string layered = file.runs[1].k;
  EXPECT_EQ(layered, R"({"default":"tq:b=2","layers":{"1":"tq:b=4"}})");
  const std::string table = report_text(file, {});
  EXPECT_NE(table.find("| " + layered), std::string::npos) << table;
  EXPECT_NE(table.find("(sd "), std::string::npos) << table;
  ReportOptions csv;
  csv.format = ReportFormat::csv;
  EXPECT_NE(report_text(file, csv).find(R"("{""default"":""tq:b=2"",""layers"":{""1"":""tq:b=4""}}")"),
            std::string::npos)
      << report_text(file, csv);
}

TEST_F(ReportTest, UnknownMetricOrSchemaIsAnError) {
  const SweepResultsFile file = results({{"tq:b=3", 3.125, 0.03}});
  ReportOptions options;
  options.metrics = {"attn_kll"};
  EXPECT_TRUE(throws_input_error([&] { report_text(file, options); }, {"results.json", "attn_kll", "attn_kl"}));
  const std::string bounds = scratch_.file("bounds.json");
  std::ofstream(bounds) << R"({"schema": "tqlab.bounds/1", "rows": []})";
  EXPECT_TRUE(
      throws_input_error([&] { read_sweep_results(bounds); }, {"bounds.json", "tqlab.bounds/1", "tqlab.sweep/1"}));
  const std::string broken = scratch_.file("broken.json");
  std::ofstream(broken) << R"({"schema": "tqlab.sweep/1", "runs": [{"id": "x"}]})";
  EXPECT_TRUE(throws_input_error([&] { read_sweep_results(broken); }, {"broken.json", "runs[0]", "k"}));
}

}  // namespace
}  // namespace tqlab
