#include "job/totals_json.h"

#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/index.h"
#include "io/read_back.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kNaN = "NaN", kInfinity = "Infinity", kMinusInfinity = "-Infinity";
constexpr int kBitsFields = 5;

// A number read straight from the value (arrays of KL values are long: no reader per element).
bool exact_number_of(const nlohmann::json& value, double& out) {
  if (value.is_number()) {
    out = value.get<double>();
    return true;
  }
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  if (text == kNaN)
    out = std::numeric_limits<double>::quiet_NaN();
  else if (text == kInfinity)
    out = std::numeric_limits<double>::infinity();
  else if (text == kMinusInfinity)
    out = -std::numeric_limits<double>::infinity();
  else
    return false;
  return true;
}

std::vector<double> read_numbers(const JsonReader& reader, std::size_t expected = 0) {
  if (!reader.is_array()) reader.fail("expected an array of numbers, got {}", reader.type_name());
  const nlohmann::json& array = reader.value();
  if (expected != 0 && array.size() != expected) reader.fail("expected {} numbers, got {}", expected, array.size());
  std::vector<double> out(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    if (!exact_number_of(array[i], out[i])) reader.fail("element {} is not a number", i);
  }
  return out;
}

Json numbers_json(const std::vector<double>& values) {
  Json out = Json::array();
  for (double value : values) out.push_back(exact_number_json(value));
  return out;
}

template <std::size_t N>
Json sums_json(const std::array<RatioSum, N>& sums) {
  Json out = Json::array();
  for (const RatioSum& sum : sums) {
    out.push_back(exact_number_json(sum.numerator));
    out.push_back(exact_number_json(sum.denominator));
  }
  return out;
}

// Read back by io/read_back.h's rule, with the exact numbers' NaN (not measured) kept: a quantity
// that cannot be negative (a weight, a count, an error, a divergence) is NaN or, finite, within
// [0, kReadBackLimit]; KL may also be +Infinity (a probability rounded to 0).
enum class Measured { finite, or_infinity };
double check_measured(const JsonReader& reader, double value, Measured kind, std::string_view where) {
  if (std::isnan(value) || (kind == Measured::or_infinity && value == std::numeric_limits<double>::infinity())) {
    return value;
  }
  return check_read_back_number(reader, value, Sign::non_negative, where);
}

double read_measured(const JsonReader& reader) {
  return check_measured(reader, read_exact_number(reader), Measured::finite, "");
}

template <std::size_t N>
std::array<RatioSum, N> read_sums(const JsonReader& reader) {
  const std::vector<double> flat = read_numbers(reader, 2 * N);
  std::array<RatioSum, N> out{};
  for (std::size_t i = 0; i < N; ++i) {
    // A numerator may be any sum (cosines, biases); a denominator counts or weighs.
    const std::string where = fmt::format("element {} (a denominator): ", 2 * i + 1);
    out[i] = {flat[2 * i], check_measured(reader, flat[2 * i + 1], Measured::finite, where)};
  }
  return out;
}

Json run_seed_json(const ItemRunSeedTotals& run) {
  Json attention = Json::array();
  for (const AttentionSums& head : run.attention) attention.push_back(sums_json(head));
  Json needle = Json::array();
  for (const std::vector<NeedleOutcome>& trial : run.needle) {
    Json margins = Json::array();
    for (const NeedleOutcome& outcome : trial)
      margins.push_back({outcome.top1, exact_number_json(outcome.weight_ratio)});
    needle.push_back(margins);
  }
  Json out;
  out["reconstruction"] = sums_json(run.reconstruction);
  out["attention"] = attention;
  out["needle"] = needle;
  out["bits"] = numbers_json({run.key_bits, run.value_bits, run.key_values, run.value_values, run.effective_bits});
  return out;
}

ItemRunSeedTotals read_run_seed(const JsonReader& reader) {
  reader.allow_only({"reconstruction", "attention", "needle", "bits"});
  ItemRunSeedTotals run;
  run.reconstruction = read_sums<kReconstructionSums>(reader.at("reconstruction"));
  for (const JsonReader& head : reader.at("attention").elements())
    run.attention.push_back(read_sums<kAttentionSums>(head));
  for (const JsonReader& trial : reader.at("needle").elements()) {
    std::vector<NeedleOutcome>& outcomes = run.needle.emplace_back();
    for (const JsonReader& margin : trial.elements()) {
      const std::vector<JsonReader> pair = margin.elements();
      if (pair.size() != 2) margin.fail("expected [top1, weight ratio]");
      outcomes.push_back({pair[0].as_bool(), read_measured(pair[1])});
    }
  }
  std::vector<double> bits = read_numbers(reader.at("bits"), kBitsFields);
  for (std::size_t i = 0; i < bits.size(); ++i) {
    bits[i] = check_measured(reader.at("bits"), bits[i], Measured::finite, fmt::format("element {}: ", i));
  }
  run.key_bits = bits[0];
  run.value_bits = bits[1];
  run.key_values = bits[2];
  run.value_values = bits[3];
  run.effective_bits = bits[4];
  return run;
}

constexpr std::int64_t kMaxCount = std::int64_t{1} << 62;

}  // namespace

Json exact_number_json(double value) {
  if (std::isnan(value)) return std::string(kNaN);
  if (std::isinf(value)) return std::string(value > 0 ? kInfinity : kMinusInfinity);
  return value;
}

double read_exact_number(const JsonReader& reader) {
  double out = 0;
  if (!exact_number_of(reader.value(), out)) {
    reader.fail("expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), got {}", reader.type_name());
  }
  return out;
}

Json kl_part_json(const KlPart& part) { return Json::array({part.count, numbers_json(part.largest)}); }

KlPart read_kl_part(const JsonReader& reader) {
  const std::vector<JsonReader> pair = reader.elements();
  if (pair.size() != 2) reader.fail("expected [count, [values]]");
  KlPart part;
  part.count = pair[0].as_integer(0, kMaxCount);
  part.largest = read_numbers(pair[1]);
  for (std::size_t i = 0; i < part.largest.size(); ++i) {
    check_measured(pair[1], part.largest[i], Measured::or_infinity, fmt::format("element {}: ", i));
  }
  return part;
}

namespace {

Json exact_numbers_json(const std::vector<double>& values) {
  Json out = Json::array();
  for (double value : values) out.push_back(exact_number_json(value));
  return out;
}

// Per-token NLLs, KLs, probabilities, agreements: none negative.
std::vector<double> read_exact_numbers(const JsonReader& reader) {
  std::vector<double> values;
  for (const JsonReader& value : reader.elements()) {
    values.push_back(check_measured(value, read_exact_number(value), Measured::or_infinity, ""));
  }
  return values;
}

// The members of a model_run unit, in the order the JSON names them.
constexpr std::array<std::pair<const char*, std::vector<double> NextTokenSeries::*>, 6> kSeriesMembers{{
    {"nll_base", &NextTokenSeries::nll_base},
    {"nll", &NextTokenSeries::nll},
    {"kld", &NextTokenSeries::kld},
    {"p_base", &NextTokenSeries::p_base},
    {"p", &NextTokenSeries::p},
    {"same_top1", &NextTokenSeries::same_top1},
}};
constexpr std::array<std::pair<const char*, std::vector<std::uint64_t> KvCacheBytes::*>, 4> kBytesMembers{{
    {"key", &KvCacheBytes::key},
    {"value", &KvCacheBytes::value},
    {"key_values", &KvCacheBytes::key_values},
    {"value_values", &KvCacheBytes::value_values},
}};

Json model_run_json(const RunSeedResult& run) {
  Json series, bytes;
  for (const auto& [name, member] : kSeriesMembers) series[name] = exact_numbers_json(run.series.*member);
  for (const auto& [name, member] : kBytesMembers) bytes[name] = run.bytes.*member;
  bytes["key_head"] = run.bytes.key_head;
  bytes["value_head"] = run.bytes.value_head;
  return {{"series", series}, {"bytes", bytes}};
}

RunSeedResult read_model_run(const JsonReader& reader) {
  RunSeedResult run;
  const JsonReader series = reader.at("series");
  series.allow_only({"nll_base", "nll", "kld", "p_base", "p", "same_top1"});
  for (const auto& [name, member] : kSeriesMembers) run.series.*member = read_exact_numbers(series.at(name));
  const JsonReader bytes = reader.at("bytes");
  bytes.allow_only({"key", "value", "key_values", "value_values", "key_head", "value_head"});
  for (const auto& [name, member] : kBytesMembers) {
    for (const JsonReader& count : bytes.at(name).elements()) (run.bytes.*member).push_back(count.as_unsigned());
  }
  for (const auto& [name, member] : {std::pair{"key_head", &KvCacheBytes::key_head},
                                     std::pair{"value_head", &KvCacheBytes::value_head}}) {
    for (const JsonReader& layer : bytes.at(name).elements()) {
      std::vector<std::uint64_t>& heads = (run.bytes.*member).emplace_back();
      for (const JsonReader& count : layer.elements()) heads.push_back(count.as_unsigned());
    }
  }
  return run;
}

}  // namespace

Json unit_totals_json(const UnitTotals& unit, bool with_kl) {
  Json out;
  out["unit"] = unit.unit;
  if (!unit.base_nll.empty()) {
    out["base_nll"] = exact_numbers_json(unit.base_nll);
    return out;
  }
  if (unit.model_run) {
    out["model_run"] = model_run_json(*unit.model_run);
    return out;
  }
  if (!unit.synthetic.empty()) {
    Json outcomes = Json::array();
    for (const SyntheticOutcome& outcome : unit.synthetic) {
      outcomes.push_back(
          {outcome.measured, exact_number_json(outcome.weight), exact_number_json(outcome.output_error)});
    }
    out["synthetic"] = outcomes;
    return out;
  }
  const ItemTotals& item = unit.item;
  out["tokens"] = item.tokens;
  out["skipped"] = {item.skipped_keys, item.skipped_values, item.skipped_queries};
  out["needle_trials"] = item.measured_trials;
  Json run_seeds = Json::array();
  for (const ItemRunSeedTotals& run : item.run_seeds) run_seeds.push_back(run_seed_json(run));
  out["run_seeds"] = run_seeds;
  if (with_kl) {
    Json kl = Json::array();
    for (const std::vector<KlPart>& heads : unit.kl) {
      Json parts = Json::array();
      for (const KlPart& part : heads) parts.push_back(kl_part_json(part));
      kl.push_back(parts);
    }
    out["kl"] = kl;
  }
  return out;
}

UnitTotals read_unit_totals(const JsonReader& reader) {
  UnitTotals unit;
  unit.unit = static_cast<int>(reader.at("unit").as_integer(0, std::numeric_limits<int>::max()));
  if (reader.has("synthetic")) {
    reader.allow_only({"unit", "synthetic"});
    for (const JsonReader& outcome : reader.at("synthetic").elements()) {
      const std::vector<JsonReader> fields = outcome.elements();
      if (fields.size() != 3) outcome.fail("expected [measured, weight, output error]");
      unit.synthetic.push_back({fields[0].as_bool(), read_measured(fields[1]), read_measured(fields[2])});
    }
    if (unit.synthetic.empty()) reader.at("synthetic").fail("no outcomes");
    return unit;
  }
  if (const auto nll = reader.find("base_nll")) {
    reader.allow_only({"unit", "base_nll"});
    unit.base_nll = read_exact_numbers(*nll);
    if (unit.base_nll.empty()) nll->fail("no tokens");
    return unit;
  }
  if (const auto run = reader.find("model_run")) {
    reader.allow_only({"unit", "model_run"});
    unit.model_run = read_model_run(*run);
    return unit;
  }
  reader.allow_only({"unit", "tokens", "skipped", "needle_trials", "run_seeds", "kl"});
  ItemTotals& item = unit.item;
  item.done = true;
  item.tokens = static_cast<int>(reader.at("tokens").as_integer(0, std::numeric_limits<int>::max()));
  const std::vector<JsonReader> skipped = reader.at("skipped").elements();
  if (skipped.size() != 3) reader.at("skipped").fail("expected [keys, values, queries]");
  item.skipped_keys = skipped[0].as_integer(0, kMaxCount);
  item.skipped_values = skipped[1].as_integer(0, kMaxCount);
  item.skipped_queries = skipped[2].as_integer(0, kMaxCount);
  item.measured_trials = static_cast<int>(reader.at("needle_trials").as_integer(0, std::numeric_limits<int>::max()));
  for (const JsonReader& run : reader.at("run_seeds").elements()) item.run_seeds.push_back(read_run_seed(run));
  if (const auto kl = reader.find("kl")) {
    for (const JsonReader& heads : kl->elements()) {
      std::vector<KlPart>& parts = unit.kl.emplace_back();
      for (const JsonReader& part : heads.elements()) parts.push_back(read_kl_part(part));
    }
  }
  return unit;
}

}  // namespace tqlab
