// The sweep's journal (sweep/sweep_journal.h) and the JSON of its totals
// (sweep/totals_json.h): doubles and units read back to the bit, records that
// survive a kill mid-write (a torn last line is dropped, the file cut back), a
// damaged record skipped, a journal of another config or one in use refused,
// and a sweep stopped half way then resumed from its journal giving the very
// document of a run in one go.
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io_test_util.h"
#include "job/sweep_identity.h"
#include "job/sweep_journal.h"
#include "job/totals_json.h"
#include "sweep_test_util.h"

namespace tqlab {
namespace {

using sweep_test::DumpShape;

nlohmann::json journal_config() {
  return {{"data", {{"path", "dump.safetensors"}}},
          {"grid", {{"k", {"tq:b=3", "kivi:b=2,group=16"}}, {"v", {"tq:b=2"}}, {"window", {0, 4}}}},
          {"seeds", {0, 1}},
          {"metrics",
           {{"attention", {{"chunk", 16}}}, {"needle", {{"trials", 8}, {"synth_trials", 2}}}, {"per_head", true}}}};
}

struct Fixture {
  io_test::ScratchDir scratch;
  SweepPlan plan;
  Fixture() {
    sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{2, 2, 2, 4, 40, 16, 8});
    plan = plan_sweep(parse_sweep_config(journal_config(), scratch.file("c.json")));
  }
  JournalIdentity identity() const {
    return {sweep_config_hash(plan), "dump.safetensors", 1234, WorkUnits(plan).count()};
  }
};

std::string text_of(const UnitTotals& unit) { return unit_totals_json(unit, true).dump(); }

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Every unit of the plan, measured.
std::vector<UnitTotals> measure_units(const SweepPlan& plan) {
  std::vector<UnitTotals> units;
  SweepOptions options;
  options.threads = 2;
  options.on_unit_done = [&](const UnitTotals& unit) { units.push_back(unit); };
  SweepTiming timing;
  (void)compute_sweep_totals(plan, options, timing);
  return units;
}

TEST(TotalsJson, DoublesReadBackToTheBit) {
  std::mt19937_64 bits(5);
  std::vector<double> values{0.0,
                             -0.0,
                             1.0,
                             -1.5,
                             std::numeric_limits<double>::min(),
                             std::numeric_limits<double>::denorm_min(),
                             std::numeric_limits<double>::max(),
                             -std::numeric_limits<double>::max(),
                             0.1,
                             1.0 / 3.0,
                             2.2250738585072009e-308};
  for (int i = 0; i < 20000; ++i) {
    const double value = std::bit_cast<double>(bits());
    if (std::isfinite(value)) values.push_back(value);
  }
  for (double value : values) {
    const nlohmann::json parsed = nlohmann::json::parse(exact_number_json(value).dump());
    const double back = read_exact_number(JsonReader(parsed, "f"));
    ASSERT_EQ(std::bit_cast<std::uint64_t>(back), std::bit_cast<std::uint64_t>(value)) << value;
  }
  for (double special : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    const nlohmann::json parsed = nlohmann::json::parse(exact_number_json(special).dump());
    EXPECT_EQ(read_exact_number(JsonReader(parsed, "f")), special);
  }
  const nlohmann::json nan = nlohmann::json::parse(exact_number_json(std::nan("")).dump());
  EXPECT_EQ(nan, "NaN");
  EXPECT_TRUE(std::isnan(read_exact_number(JsonReader(nan, "f"))));
  const nlohmann::json word = "nan";
  EXPECT_THROW(read_exact_number(JsonReader(word, "f")), InputError);
}

TEST(TotalsJson, MeasuredUnitsReadBackUnchanged) {
  Fixture fixture;
  const std::vector<UnitTotals> units = measure_units(fixture.plan);
  ASSERT_EQ(static_cast<int>(units.size()), WorkUnits(fixture.plan).count());
  int with_kl = 0, synthetic = 0;
  for (const UnitTotals& unit : units) {
    const nlohmann::json parsed = nlohmann::json::parse(text_of(unit));
    const UnitTotals back = read_unit_totals(JsonReader(parsed, "f"));
    EXPECT_EQ(text_of(back), text_of(unit));
    with_kl += !back.kl.empty();
    synthetic += !back.synthetic.empty();
    if (!unit.item.run_seeds.empty()) {
      const double a = unit.item.run_seeds.back().reconstruction[kKeyRelMse].numerator;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(back.item.run_seeds.back().reconstruction[kKeyRelMse].numerator),
                std::bit_cast<std::uint64_t>(a));
    }
  }
  EXPECT_EQ(with_kl, 2 * 2 * 2);
  EXPECT_EQ(synthetic, 2);
}

TEST(SweepJournal, RecordsReadBackAndRefuseAnotherConfigOrAMissingResume) {
  Fixture fixture;
  const std::vector<UnitTotals> units = measure_units(fixture.plan);
  const std::string path = fixture.scratch.file("out.json.journal");
  {
    JournalContents found;
    SweepJournal journal(path, fixture.identity(), false, found);
    EXPECT_TRUE(found.units.empty());
    for (const UnitTotals& unit : units) journal.append_unit(unit);
    journal.append_data_sha256("ab");
    // A second sweep of the same output while this one runs.
    JournalContents other;
    try {
      SweepJournal second(path, fixture.identity(), true, other);
      ADD_FAILURE() << "a journal in use was opened twice";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("in use"), std::string::npos) << error.what();
    }
  }
  JournalContents found;
  { SweepJournal journal(path, fixture.identity(), true, found); }
  ASSERT_EQ(found.units.size(), units.size());
  for (std::size_t i = 0; i < units.size(); ++i) EXPECT_EQ(text_of(found.units[i]), text_of(units[i]));
  EXPECT_EQ(found.data_sha256, "ab");
  EXPECT_EQ(found.torn_tail + found.damaged + found.repeated, 0);

  JournalContents ignored;
  try {
    SweepJournal journal(path, fixture.identity(), false, ignored);
    ADD_FAILURE() << "an existing journal was opened without --resume";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--resume"), std::string::npos) << error.what();
  }
  JournalIdentity other = fixture.identity();
  other.config_hash = std::string(64, 'f');
  try {
    SweepJournal journal(path, other, true, ignored);
    ADD_FAILURE() << "a journal of another config was resumed";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("another config"), std::string::npos) << error.what();
  }
  JournalIdentity bigger = fixture.identity();
  bigger.data_bytes += 1;
  EXPECT_THROW(SweepJournal(path, bigger, true, ignored), InputError);
  EXPECT_EQ(lines_of(path).size(), units.size() + 2);  // refusing touched nothing
}

TEST(SweepJournal, ATornLastRecordIsDroppedAndCutOffADamagedOneSkipped) {
  Fixture fixture;
  const std::vector<UnitTotals> units = measure_units(fixture.plan);
  const std::string path = fixture.scratch.file("out.json.journal");
  {
    JournalContents found;
    SweepJournal journal(path, fixture.identity(), false, found);
    for (int i = 0; i < 4; ++i) journal.append_unit(units[static_cast<std::size_t>(i)]);
  }
  std::vector<std::string> lines = lines_of(path);
  ASSERT_EQ(lines.size(), 5u);
  // Killed while writing the fifth record: half of it reached the file, no newline.
  const std::string torn = journal_line(unit_totals_json(units[4], true).dump());
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  const std::size_t complete = text.size();
  write_text(path, text + torn.substr(0, torn.size() / 2));
  {
    JournalContents found;
    SweepJournal journal(path, fixture.identity(), true, found);
    EXPECT_EQ(found.torn_tail, 1);
    EXPECT_EQ(found.units.size(), 4u);
    EXPECT_EQ(io_test::read_bytes(path).size(), complete) << "the torn record was not cut off";
    journal.append_unit(units[4]);
  }
  {
    JournalContents found;
    SweepJournal journal(path, fixture.identity(), true, found);
    EXPECT_EQ(found.torn_tail, 0);
    ASSERT_EQ(found.units.size(), 5u);
    EXPECT_EQ(text_of(found.units[4]), text_of(units[4]));
  }
  // A byte flipped inside the second unit's record: its checksum fails, the others stand.
  lines = lines_of(path);
  const std::size_t at = lines[2].find("\"tokens\":") + 9;
  lines[2][at] = lines[2][at] == '4' ? '5' : '4';
  text.clear();
  for (const std::string& line : lines) text += line + "\n";
  write_text(path, text);
  JournalContents found;
  { SweepJournal journal(path, fixture.identity(), true, found); }
  EXPECT_EQ(found.damaged, 1);
  ASSERT_EQ(found.units.size(), 4u);
  EXPECT_EQ(found.units[1].unit, units[2].unit);
  EXPECT_FALSE(journal_record(lines[2]).has_value());
  EXPECT_TRUE(journal_record(lines[3]).has_value());
}

TEST(SweepJournal, AForeignFileIsNeitherReadNorOverwritten) {
  Fixture fixture;
  const std::string path = fixture.scratch.file("out.json.journal");
  write_text(path, "my notes, not a journal");
  JournalContents found;
  EXPECT_THROW(SweepJournal(path, fixture.identity(), true, found), InputError);
  EXPECT_EQ(lines_of(path), std::vector<std::string>{"my notes, not a journal"});
}

// Stopped after some units (as SIGTERM stops it), then resumed from the journal on another thread count.
TEST(SweepResume, StoppedThenResumedFromItsJournalGivesTheDocumentOfOneRun) {
  Fixture fixture;
  const std::string expected =
      sweep_test::results_text(sweep_test::run_config(journal_config(), fixture.scratch.file("c.json"), 2));
  const std::string path = fixture.scratch.file("out.json.journal");
  const WorkUnits work(fixture.plan);
  for (int stop_after : {0, 1, 5, work.count() - 1}) {
    SCOPED_TRACE(stop_after);
    std::remove(path.c_str());
    {
      JournalContents found;
      SweepJournal journal(path, fixture.identity(), false, found);
      SweepOptions options;
      options.threads = 1;  // one unit at a time: the stop comes exactly after stop_after units
      int reported = 0;
      options.on_unit_done = [&](const UnitTotals& unit) {
        journal.append_unit(unit);
        ++reported;
      };
      options.stop_requested = [&] { return reported >= stop_after; };
      SweepTiming timing;
      EXPECT_THROW(compute_sweep_totals(fixture.plan, options, timing), SweepStopped);
      EXPECT_EQ(reported, stop_after);
    }
    JournalContents found;
    SweepJournal journal(path, fixture.identity(), true, found);
    SweepOptions options;
    options.threads = 2;
    std::size_t computed = 0;
    options.add_known_units = [&](SweepTotals& totals) {
      for (UnitTotals& unit : found.units) add_unit_totals(totals, work, std::move(unit));
    };
    options.on_unit_done = [&](const UnitTotals&) { ++computed; };
    sweep_test::SweepRun resumed{plan_sweep(parse_sweep_config(journal_config(), fixture.scratch.file("c.json"))), {}};
    resumed.results = run_sweep(resumed.plan, options);
    EXPECT_EQ(computed + lines_of(path).size() - 1, static_cast<std::size_t>(work.count()));
    EXPECT_EQ(sweep_test::results_text(resumed), expected);
  }
}

// The same for a model block's units (base and (run, seed) per chunk), on the bundled model.
TEST(SweepResume, AModelBlockStoppedThenResumedGivesTheDocumentOfOneRun) {
  io_test::ScratchDir scratch;
  {
    std::ofstream text(scratch.file("text.txt"), std::ios::binary);
    for (int i = 0; i < 40; ++i) text << "Once upon a time there was a little model that measured its cache. ";
  }
  const nlohmann::json config = {
      {"model", {{"path", std::string(TQLAB_SOURCE_DIR) + "/data/tinyllama_hf"}, {"text", "text.txt"}, {"ctx", 64},
                 {"chunks", 3}}},
      {"grid", {{"k", {"tq:b=3,nc", "tq:b=2"}}, {"v", {"tq:b=3,nc"}}}},
      {"seeds", {0, 1}},
      {"metrics", {{"reconstruction", false}, {"attention", false}, {"needle", false}}}};
  const std::string config_path = scratch.file("c.json");
  const std::string expected = sweep_test::results_text(sweep_test::run_config(config, config_path, 2));
  const SweepPlan plan = plan_sweep(parse_sweep_config(config, config_path));
  const WorkUnits work(plan);
  ASSERT_EQ(work.count(), 3 + 2 * 2 * 3);  // a base and every (run, seed) per chunk
  ASSERT_EQ(work.kind(work.first_model_unit()), UnitKind::model_base);
  const JournalIdentity identity{sweep_config_hash(plan), "", 0, work.count()};
  const std::string path = scratch.file("out.json.journal");
  for (int stop_after : {1, 4, work.count() - 1}) {
    SCOPED_TRACE(stop_after);
    std::remove(path.c_str());
    {
      JournalContents found;
      SweepJournal journal(path, identity, false, found);
      SweepOptions options;
      options.threads = 1;
      int reported = 0;
      options.on_unit_done = [&](const UnitTotals& unit) {
        journal.append_unit(unit);
        ++reported;
      };
      options.stop_requested = [&] { return reported >= stop_after; };
      SweepTiming timing;
      EXPECT_THROW(compute_sweep_totals(plan, options, timing), SweepStopped);
      EXPECT_EQ(reported, stop_after);
    }
    JournalContents found;
    SweepJournal journal(path, identity, true, found);
    ASSERT_EQ(found.units.size(), static_cast<std::size_t>(stop_after));
    SweepOptions options;
    options.threads = 2;
    options.add_known_units = [&](SweepTotals& totals) {
      for (UnitTotals& unit : found.units) add_unit_totals(totals, work, std::move(unit));
    };
    sweep_test::SweepRun resumed{plan_sweep(parse_sweep_config(config, config_path)), {}};
    resumed.results = run_sweep(resumed.plan, options);
    EXPECT_EQ(sweep_test::results_text(resumed), expected);
  }
}

}  // namespace
}  // namespace tqlab
