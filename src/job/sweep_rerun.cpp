#include "job/sweep_rerun.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "io/json_reader.h"
#include "job/shard_document.h"
#include "job/sweep_identity.h"
#include "results/results_document.h"
#include "tqlab_version.h"

namespace tqlab {

namespace {

// What a results document says its sweep read: its data section, or for an
// end-to-end sweep without a dump the identity of its model and tokens.
DataIdentity recorded_data(const nlohmann::json& document, const JsonReader& root) {
  if (!document.contains("data") && document.contains("model")) {
    try {
      return model_input_identity(document);
    } catch (const nlohmann::json::exception& error) {
      root.fail("its model and tokens sections do not read: {}", error.what());
    }
  }
  const JsonReader data = root.at("data");
  return {data.at("bytes").as_unsigned(), data.at("sha256").as_string()};
}

}  // namespace

SweepConfigSource load_sweep_config_source(const std::string& path) {
  const nlohmann::json document = read_json_file(path);
  SweepConfigSource source;
  const auto schema = document.is_object() ? document.find("schema") : document.end();
  if (!document.is_object() || schema == document.end()) {
    source.config = parse_sweep_config(document, path);
    return source;
  }
  const JsonReader root(document, path, "", "results");
  const std::string name = root.at("schema").as_string();
  if (name == kShardSchema) {
    root.fail(
        "a {} document holds one shard of a sweep: join the shards with tqlab merge; a sweep re-runs from "
        "their merged results",
        kShardSchema);
  }
  if (name != kSweepSchema)
    root.fail("neither a sweep config nor {} results (schema {})", kSweepSchema, printable(name));
  source.from_results = true;
  source.config = parse_sweep_config(document.at("config"), path);
  for (const JsonReader& run : root.at("runs").elements()) source.origins.push_back(run.at("origin").as_string());
  source.data = recorded_data(document, root);
  const JsonReader tqlab = root.at("tqlab");
  source.version = tqlab.at("version").as_string();
  source.git_commit = tqlab.at("git_commit").as_string();
  return source;
}

bool is_finished_results(const std::string& path, const std::string& config_hash, const DataIdentity& data) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  try {
    const nlohmann::json document = read_json_file(path, "results");
    const JsonReader root(document, path, "", "results");
    return root.at("schema").as_string() == kSweepSchema && sweep_config_hash(document.at("config")) == config_hash &&
           recorded_data(document, root) == data;
  } catch (const InputError&) {
    return false;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

void apply_recorded_origins(const SweepConfigSource& source, SweepPlan& plan) {
  if (!source.from_results || source.origins.size() != plan.runs.size()) return;
  for (std::size_t run = 0; run < plan.runs.size(); ++run) plan.runs[run].origin = source.origins[run];
}

std::vector<std::string> rerun_differences(const SweepConfigSource& source, const DataIdentity& data) {
  std::vector<std::string> differences;
  if (!source.from_results) return differences;
  const std::string& path = source.config.config_path;
  if (data.sha256 != source.data.sha256 || data.bytes != source.data.bytes) {
    differences.push_back(fmt::format(
        "the inputs ({}) are not those '{}' was computed from (sha256 {}, {} bytes; recorded {}, {} bytes): the "
        "numbers may differ",
        describe_sweep_inputs(source.config), printable(path), data.sha256.substr(0, 12), data.bytes,
        source.data.sha256.substr(0, 12), source.data.bytes));
  }
  if (source.version != TQLAB_VERSION) {
    differences.push_back(
        fmt::format("'{}' was computed by tqlab {} ({}), this is tqlab {} ({}): the numbers may differ",
                    printable(path), source.version, source.git_commit, TQLAB_VERSION, TQLAB_GIT_COMMIT));
  }
  return differences;
}

}  // namespace tqlab
