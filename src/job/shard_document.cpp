#include "job/shard_document.h"

#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/index.h"
#include "core/kernel_set.h"
#include "core/parallel.h"
#include "core/text.h"
#include "io/json_reader.h"
#include "job/sweep_identity.h"
#include "job/totals_json.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kKind = "shard";
constexpr std::int64_t kMaxIndex = std::numeric_limits<int>::max();

KlPart tail_part(const UpperQuantile& tail) { return {tail.count(), tail.kept()}; }

void add_tail(UpperQuantile& tail, const KlPart& part, const std::string& what) {
  const std::size_t needed = std::min<std::size_t>(static_cast<std::size_t>(part.count), tail.capacity());
  if (part.largest.size() != needed) {
    fail("{}: keeps {} of {} values, the tail keeps {}", what, part.largest.size(), part.count, needed);
  }
  tail.add_kept(part.count, part.largest);
}

Json kl_tails_json(const KlTailsPart& part) {
  Json layers = Json::array(), heads = Json::array();
  for (const KlPart& layer : part.layers) layers.push_back(kl_part_json(layer));
  for (const std::vector<KlPart>& layer : part.heads) {
    Json row = Json::array();
    for (const KlPart& head : layer) row.push_back(kl_part_json(head));
    heads.push_back(row);
  }
  return {{"all", kl_part_json(part.all)}, {"layers", layers}, {"heads", heads}};
}

KlTailsPart read_kl_tails(const JsonReader& reader) {
  reader.allow_only({"all", "layers", "heads"});
  KlTailsPart part;
  part.all = read_kl_part(reader.at("all"));
  for (const JsonReader& layer : reader.at("layers").elements()) part.layers.push_back(read_kl_part(layer));
  for (const JsonReader& layer : reader.at("heads").elements()) {
    std::vector<KlPart>& row = part.heads.emplace_back();
    for (const JsonReader& head : layer.elements()) row.push_back(read_kl_part(head));
  }
  return part;
}

SweepTiming read_timing(const JsonReader& reader) {
  SweepTiming timing;
  timing.total_seconds = reader.at("total_seconds").as_number();
  timing.threads = static_cast<int>(reader.at("threads").as_integer(0, kMaxIndex));
  const JsonReader workers = reader.at("worker_seconds");
  timing.read_seconds = workers.at("read").as_number();
  timing.quantize_seconds = workers.at("quantize").as_number();
  timing.attention_seconds = workers.at("attention").as_number();
  timing.needle_seconds = workers.at("needle").as_number();
  if (const auto model = reader.find("model_seconds")) {
    timing.model_base_seconds = model->at("base").as_number();
    timing.model_runs_seconds = model->at("runs").as_number();
  }
  return timing;
}

int read_count(const JsonReader& reader) { return static_cast<int>(reader.as_integer(0, kMaxIndex)); }

}  // namespace

std::vector<std::pair<int, int>> unit_ranges(const std::vector<int>& units) {
  std::vector<std::pair<int, int>> ranges;
  for (int unit : units) {
    if (!ranges.empty() && ranges.back().second + 1 == unit) {
      ranges.back().second = unit;
    } else {
      ranges.emplace_back(unit, unit);
    }
  }
  return ranges;
}

void expect_shard_schema(const JsonReader& root, std::string_view schema, std::string_view near_schema,
                         std::string_view hint) {
  if (!root.is_object() || !root.has("schema") || !root.at("schema").is_string()) {
    root.fail("not a {} document: no \"schema\" string", schema);
  }
  const std::string found = root.at("schema").as_string();
  if (found != schema)
    root.fail("not a {} document but {}{}", schema, printable(found), found == near_schema ? hint : "");
}

ShardHeader read_shard_header(const JsonReader& root) {
  ShardHeader header;
  const JsonReader tqlab = root.at("tqlab");
  header.version = tqlab.at("version").as_string();
  header.git_commit = tqlab.at("git_commit").as_string();
  const JsonReader spec = root.at("shard");
  header.shard.count = static_cast<int>(spec.at("count").as_integer(1, kMaxShards));
  header.shard.index = static_cast<int>(spec.at("index").as_integer(1, header.shard.count));
  return header;
}

nlohmann::ordered_json unit_ranges_json(const std::vector<int>& units) {
  Json ranges = Json::array();
  for (const auto& [first, last] : unit_ranges(units)) ranges.push_back({first, last});
  return ranges;
}

std::vector<int> read_unit_ranges(const JsonReader& ranges, int units) {
  std::vector<int> held;
  for (const JsonReader& range : ranges.elements()) {
    const std::vector<JsonReader> ends = range.elements();
    if (ends.size() != 2) range.fail("expected [first, last]");
    const int first = read_count(ends[0]), last = read_count(ends[1]);
    if (first > last || last >= units || (!held.empty() && first <= held.back())) {
      range.fail("[{}, {}] is not a range of units after the previous ones, below {}", first, last, units);
    }
    for (int unit = first; unit <= last; ++unit) held.push_back(unit);
  }
  return held;
}

std::string describe_unit_ranges(const std::vector<int>& units) {
  std::string text;
  for (const auto& [first, last] : unit_ranges(units)) {
    if (!text.empty()) text += ",";
    text += first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
  }
  return text.empty() ? "none" : text;
}

std::vector<KlTailsPart> kl_tails_parts(const SweepTotals& totals) {
  std::vector<KlTailsPart> parts;
  for (const KlTails& tails : totals.kl_tails) {
    KlTailsPart& part = parts.emplace_back();
    part.all = tail_part(*tails.all);
    for (const UpperQuantile& layer : tails.layer) part.layers.push_back(tail_part(layer));
    for (const std::vector<UpperQuantile>& layer : tails.head) {
      std::vector<KlPart>& row = part.heads.emplace_back();
      for (const UpperQuantile& head : layer) row.push_back(tail_part(head));
    }
  }
  return parts;
}

void add_kl_tails_part(KlTails& tails, const KlTailsPart& part, const std::string& what) {
  if (part.layers.size() != tails.layer.size() || part.heads.size() != tails.head.size()) {
    fail("{}: KL tails of {} layers, the sweep has {}", what, part.layers.size(), tails.layer.size());
  }
  for (std::size_t li = 0; li < tails.head.size(); ++li) {
    if (part.heads[li].size() != tails.head[li].size()) {
      fail("{}: KL tails of {} q heads in layer index {}, the sweep has {}", what, part.heads[li].size(), li,
           tails.head[li].size());
    }
  }
  add_tail(*tails.all, part.all, what + ": kl_tails.all");
  for (std::size_t li = 0; li < tails.layer.size(); ++li) {
    add_tail(tails.layer[li], part.layers[li], fmt::format("{}: kl_tails.layers[{}]", what, li));
    for (std::size_t h = 0; h < tails.head[li].size(); ++h) {
      add_tail(tails.head[li][h], part.heads[li][h], fmt::format("{}: kl_tails.heads[{}][{}]", what, li, h));
    }
  }
}

nlohmann::ordered_json shard_document_json(const SweepPlan& plan, const ShardSpec& shard, const std::vector<int>& held,
                                           const SweepTotals& totals, const DataIdentity& data,
                                           const SweepTiming& timing) {
  const WorkUnits units(plan);
  const Json config = sweep_config_json(plan);
  Json out;
  out["schema"] = kShardSchema;
  out["tqlab"] = {{"version", TQLAB_VERSION},
                  {"git_commit", TQLAB_GIT_COMMIT},
                  {"blas", blas_kernels()},
                  {"kernels", std::string(kernel_set_instructions(active_kernel_set()))}};
  out["shard"] = {{"index", shard.index}, {"count", shard.count}};
  out["config_hash"] = sweep_config_hash(config);
  out["config"] = config;
  Json origins = Json::array();
  for (const PlannedRun& run : plan.runs) origins.push_back(json_text(run.origin));
  out["origins"] = origins;
  out["data"] = {{"path", json_text(plan.config.data.path)}, {"bytes", data.bytes}, {"sha256", data.sha256}};
  out["model"] = plan.model ? Json{{"path", json_text(plan.model->identity.path)},
                                   {"config_sha256", plan.model->identity.config_sha256},
                                   {"chunks", plan.model->chunks}}
                            : Json(nullptr);
  const Json holds = unit_ranges_json(held);
  out["work"] = {{"units", units.count()},
                 {"items", units.items().count()},
                 {"synthetic_trials", units.synthetic_trials()},
                 {"run_seeds", units.run_seeds().count()},
                 {"model_chunks", units.model_chunks()},
                 {"holds", holds}};
  Json unit_list = Json::array();
  for (int unit : held) {
    UnitTotals totals_of_unit;
    totals_of_unit.unit = unit;
    switch (units.kind(unit)) {
      case UnitKind::synthetic_trial:
        totals_of_unit.synthetic = at(totals.synthetic, units.synthetic_trial(unit));
        break;
      case UnitKind::model_base:
        totals_of_unit.base_nll = *at(totals.end_to_end->base_nll, units.model_chunk(unit));
        break;
      case UnitKind::model_run:
        totals_of_unit.model_run =
            at(totals.end_to_end->runs, units.model_run_seed(unit) * units.model_chunks() + units.model_chunk(unit));
        break;
      case UnitKind::item:
        totals_of_unit.item = at(totals.items, unit);
        break;
    }
    unit_list.push_back(unit_totals_json(totals_of_unit, false));
  }
  out["units"] = unit_list;
  if (!totals.kl_tails.empty()) {
    Json tails = Json::array();
    for (const KlTailsPart& part : kl_tails_parts(totals)) tails.push_back(kl_tails_json(part));
    out["kl_tails"] = tails;
  }
  out["timing"] = sweep_timing_json(timing, plan.model != nullptr);
  return out;
}

ShardDocument read_shard_document(const std::string& path) {
  const nlohmann::json document = read_json_file(path, kKind);
  const JsonReader root(document, path, "", std::string(kKind));
  expect_shard_schema(root, kShardSchema, "tqlab.sweep/1", " (a finished sweep's results, not a shard)");
  root.allow_only({"schema", "tqlab", "shard", "config_hash", "config", "origins", "data", "model", "work", "units",
                   "kl_tails", "timing"});
  ShardDocument shard;
  shard.path = path;
  ShardHeader header = read_shard_header(root);
  shard.version = std::move(header.version);
  shard.git_commit = std::move(header.git_commit);
  shard.shard = header.shard;
  shard.config_hash = root.at("config_hash").as_string();
  if (!root.at("config").is_object()) root.at("config").fail("expected the sweep's config, an object");
  shard.config_text = document.at("config").dump();
  for (const JsonReader& origin : root.at("origins").elements()) shard.origins.push_back(origin.as_string());
  const JsonReader data = root.at("data");
  shard.data_path = data.at("path").as_string();
  shard.data.bytes = data.at("bytes").as_unsigned();
  shard.data.sha256 = data.at("sha256").as_string();
  const JsonReader work = root.at("work");
  shard.units = read_count(work.at("units"));
  shard.items = read_count(work.at("items"));
  shard.synthetic_trials = read_count(work.at("synthetic_trials"));
  shard.run_seeds = read_count(work.at("run_seeds"));
  shard.model_chunks = read_count(work.at("model_chunks"));
  shard.held = read_unit_ranges(work.at("holds"), shard.units);
  const std::vector<JsonReader> units = root.at("units").elements();
  if (units.size() != shard.held.size()) {
    root.at("units").fail("holds {} units, \"work.holds\" names {}", units.size(), shard.held.size());
  }
  for (std::size_t i = 0; i < units.size(); ++i) {
    shard.unit_totals.push_back(read_unit_totals(units[i]));
    if (shard.unit_totals.back().unit != shard.held[i]) {
      units[i].fail("is unit {}, \"work.holds\" names unit {} here", shard.unit_totals.back().unit, shard.held[i]);
    }
  }
  if (const auto tails = root.find("kl_tails")) {
    for (const JsonReader& part : tails->elements()) shard.kl_tails.push_back(read_kl_tails(part));
  }
  shard.timing = read_timing(root.at("timing"));
  return shard;
}

bool is_finished_shard(const std::string& path, const ShardSpec& shard, const std::string& config_hash,
                       std::uint64_t data_bytes, const std::string& data_sha256) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  try {
    const ShardDocument document = read_shard_document(path);
    return document.shard == shard && document.config_hash == config_hash && document.data.bytes == data_bytes &&
           document.data.sha256 == data_sha256;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace tqlab
