#include "results/sweep_results_reader.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_reader.h"
#include "results/results_document.h"

namespace tqlab {
namespace {

std::optional<double> optional_number(const std::optional<JsonReader>& reader) {
  if (!reader || reader->value().is_null()) return std::nullopt;
  return reader->as_number();
}

// A spec as the run's id writes it: the string, or the per-layer object's compact JSON.
std::string spec_text(const JsonReader& reader) {
  if (reader.is_string()) return reader.as_string();
  if (!reader.is_object()) reader.fail("expected a spec string or a per-layer spec object, got {}", reader.type_name());
  return reader.value().dump();
}

ResultsRun read_run(const JsonReader& reader) {
  ResultsRun run;
  run.id = reader.at("id").as_string();
  run.k = spec_text(reader.at("k"));
  run.v = spec_text(reader.at("v"));
  run.window = reader.at("window").as_integer(0, std::numeric_limits<std::int64_t>::max());
  run.sink = reader.at("sink").as_integer(0, std::numeric_limits<std::int64_t>::max());
  if (const auto engine = reader.find("engine")) run.engine = engine->as_string();
  if (const auto prefill = reader.find("prefill")) run.prefill = prefill->as_string();
  for (const JsonReader& seed : reader.at("seeds").elements()) run.seeds.push_back(seed.as_unsigned());
  for (const auto& [name, value] : reader.at("bits").members()) {
    run.values.emplace_back(name, RunValue{optional_number(value), std::nullopt, std::nullopt});
  }
  for (const auto& [name, metric] : reader.at("metrics").members()) {
    RunValue value;
    if (!metric.value().is_null()) {
      value.mean = optional_number(metric.at("mean"));
      value.se = optional_number(metric.find("se"));
      value.std = optional_number(metric.find("std"));
    }
    run.values.emplace_back(name, value);
  }
  return run;
}

}  // namespace

const RunValue* ResultsRun::find(std::string_view name) const {
  for (const auto& [value_name, value] : values) {
    if (value_name == name) return &value;
  }
  return nullptr;
}

std::vector<std::string> SweepResultsFile::value_names() const {
  std::vector<std::string> names;
  for (const ResultsRun& run : runs) {
    for (const auto& [name, value] : run.values) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

std::string SweepResultsFile::middle_needle_metric() const {
  constexpr std::string_view prefix = "needle_top1@";
  std::vector<std::pair<double, std::string>> needles;  // (margin, name)
  for (const std::string& name : value_names()) {
    if (!name.starts_with(prefix)) continue;
    double margin = 0;
    const char* first = name.data() + prefix.size();
    if (std::from_chars(first, name.data() + name.size(), margin).ec == std::errc()) needles.emplace_back(margin, name);
  }
  if (needles.empty()) return "";
  std::sort(needles.begin(), needles.end());
  return needles[(needles.size() - 1) / 2].second;
}

SweepResultsFile read_sweep_results(const std::string& path) {
  const nlohmann::ordered_json ordered = read_results_document(path);
  const std::string schema = results_schema(ordered);
  if (schema != kSweepSchema)
    fail("results '{}': it is {}, expected {} (tqlab sweep's results)", path, schema, kSweepSchema);
  const nlohmann::json document = ordered;  // JsonReader reads plain json; the runs keep their order
  const JsonReader root(document, path, "", "results");
  SweepResultsFile out;
  out.path = path;
  if (const auto config = root.find("config")) {
    if (const auto name = config->find("name")) out.name = name->as_string();
  }
  for (const JsonReader& run : root.at("runs").elements()) {
    out.runs.push_back(read_run(run));
    if (out.bits_names.empty()) {
      for (const auto& [name, value] : run.at("bits").members()) out.bits_names.push_back(name);
    }
  }
  return out;
}

}  // namespace tqlab
