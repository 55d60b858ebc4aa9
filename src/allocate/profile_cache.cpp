#include "allocate/profile_cache.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "allocate/profile_json.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/sha256.h"
#include "io/json_reader.h"
#include "sweep/sweep_model.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

constexpr const char* kProfileCacheSchema = "tqlab.profile/1";

nlohmann::ordered_json model_source(const SweepConfig& config, const SweepModel& model) {
  const SweepModelConfig& block = *config.model;
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const WeightFileIdentity& file : model.identity.files)
    files.push_back({{"name", file.name}, {"sha256", file.sha256}});
  return {{"architecture", model.identity.architecture},
          {"config_sha256", model.identity.config_sha256},
          {"files", std::move(files)},
          {"tokens_sha256", model.tokens.sha256},
          {"tokens_tensor", model.tokens.tensor},
          {"tokenizer_sha256", model.tokens.tokenizer_sha256},
          {"add_special", model.tokens.add_special},
          {"ctx", block.ctx},
          {"chunks", model.chunks},
          {"score", scoring_name(block.score)},
          {"bos", block.bos}};
}

}  // namespace

nlohmann::ordered_json profile_source(const SweepConfig& config, const SweepModel* model, ProfileKind kind,
                                      Granularity granularity, const std::vector<std::string>& candidates,
                                      const std::string& numerics) {
  const AttentionConfig& attention = config.metrics.attention_options;
  nlohmann::ordered_json source{{"kind", profile_kind_name(kind)},
                                {"granularity", granularity_name(granularity)},
                                {"candidates", candidates},
                                {"seeds", config.seeds},
                                {"numerics", numerics},
                                {"tqlab", {{"version", TQLAB_VERSION}, {"git_commit", TQLAB_GIT_COMMIT}}},
                                {"window_mode", window_mode_name(attention.window_mode)}};
  if (kind == ProfileKind::model || config.data.path.empty()) {
    if (model == nullptr) throw InternalError("profile_source: a model profile without its model");
    source["model"] = model_source(config, *model);
  } else {
    const SweepDataConfig& data = config.data;
    source["data"] = {{"sha256", file_sha256(data.resolved_path)},
                      {"bytes", std::filesystem::file_size(data.resolved_path)},
                      {"keys", data.kv.keys},
                      {"values", data.kv.values},
                      {"queries", data.kv.queries},
                      {"layout", data.kv.layout},
                      {"layers", describe_layers(data.kv.layers)},
                      {"nonfinite", nonfinite_mode_name(data.nonfinite)}};
  }
  if (kind == ProfileKind::offline) {
    source["attention"] = {
        {"chunk", attention.chunk},
        {"causal", attention.causal},
        {"scale", attention.scale ? nlohmann::ordered_json(*attention.scale) : nlohmann::ordered_json("1/sqrt(d)")}};
  }
  return source;
}

std::string profile_content_key(const nlohmann::ordered_json& source) { return bytes_sha256(source.dump()); }

std::string profile_cache_path(const std::string& folder, ProfileKind kind, const std::string& key) {
  const std::string name = fmt::format("tqlab-profile-{}-{}.json", profile_kind_name(kind), key.substr(0, 16));
  return (std::filesystem::path(folder.empty() ? "." : folder) / name).string();
}

Profile read_profile_document(const std::string& path, const Profile* expected) {
  const nlohmann::json document = read_json_file(path, "profile");
  const JsonReader root(document, path, "", "profile");
  if (!root.is_object() || !root.has("schema") || root.at("schema").as_string() != kProfileCacheSchema) {
    root.fail("not a {} document{}", kProfileCacheSchema,
              root.is_object() && root.has("schema") && root.at("schema").value() == "tqlab.profile-shard/1"
                  ? " but one shard of it: join the shards with tqlab merge first"
                  : "");
  }
  Profile profile = profile_from_json(root.at("profile").value(), path);
  if (expected != nullptr) check_profile_fits(profile, *expected, path);
  return profile;
}

std::optional<Profile> read_cached_profile(const std::string& path, const std::string& key, const Profile& expected,
                                           std::string& warning) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    Profile profile = read_profile_document(path, nullptr);
    if (profile.content_key != key) {
      warning = fmt::format("profile cache '{}' holds another profile (content key {}); measuring again", path,
                            profile.content_key.substr(0, 16));
      return std::nullopt;
    }
    check_profile_fits(profile, expected, path);
    return profile;
  } catch (const InputError& error) {
    warning = fmt::format("profile cache '{}' is not usable ({}); measuring again", path, error.what());
    return std::nullopt;
  }
}

void write_cached_profile(const std::string& path, const Profile& profile) {
  nlohmann::ordered_json document{{"schema", kProfileCacheSchema}, {"profile", profile_json(profile, nullptr)}};
  AtomicFileWriter writer(path);
  writer.write(document.dump(1) + "\n");
  writer.commit();
}

}  // namespace tqlab
