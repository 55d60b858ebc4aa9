#include "job/sweep_identity.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/sha256.h"
#include "sweep/sweep_config_json.h"

namespace tqlab {

std::string sweep_config_hash(const nlohmann::json& config_section) {
  nlohmann::json measured = config_section;  // nlohmann::json keeps its keys sorted
  if (measured.is_object() && measured.contains("data") && measured["data"].is_object()) {
    measured["data"].erase("path");
  }
  // Paths are relative to where a document lies; what they hold is the data's identity.
  if (measured.is_object() && measured.contains("model") && measured["model"].is_object()) {
    for (const char* key : {"path", "tokens", "text", "tokenizer"}) measured["model"].erase(key);
  }
  return bytes_sha256(measured.dump());
}

std::string sweep_config_hash(const nlohmann::ordered_json& config_section) {
  return sweep_config_hash(nlohmann::json::parse(config_section.dump()));
}

std::string sweep_config_hash(const SweepPlan& plan) { return sweep_config_hash(sweep_config_json(plan)); }

namespace {

DataIdentity model_only_identity(std::uint64_t bytes, const std::vector<std::string>& digests) {
  std::string lines;
  for (const std::string& digest : digests) lines += digest + "\n";
  return {bytes, bytes_sha256(lines)};
}

}  // namespace

std::optional<DataIdentity> model_input_identity(const SweepPlan& plan) {
  if (!plan.config.data.resolved_path.empty()) return std::nullopt;
  if (plan.generated_data) return plan.generated_data;
  const SweepModel& model = *plan.model;
  std::uint64_t bytes = 0;
  std::vector<std::string> digests{model.identity.config_sha256};
  for (const WeightFileIdentity& file : model.identity.files) {
    bytes += file.bytes;
    digests.push_back(file.sha256);
  }
  digests.push_back(model.tokens.sha256);
  digests.push_back(model.tokens.tokenizer_sha256);
  return model_only_identity(bytes, digests);
}

DataIdentity model_input_identity(const nlohmann::json& results) {
  const nlohmann::json& model = results.at("model");
  std::uint64_t bytes = 0;
  std::vector<std::string> digests{model.at("config_sha256").get<std::string>()};
  for (const nlohmann::json& file : model.at("files")) {
    bytes += file.at("bytes").get<std::uint64_t>();
    digests.push_back(file.at("sha256").get<std::string>());
  }
  const nlohmann::json& tokens = results.at("tokens");
  digests.push_back(tokens.at("sha256").get<std::string>());
  digests.push_back(tokens.contains("tokenizer") ? tokens.at("tokenizer").at("sha256").get<std::string>() : "");
  return model_only_identity(bytes, digests);
}

struct DataDigest::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<std::string> digest;
  std::exception_ptr error;
};

DataDigest::DataDigest(std::string path) : state_(std::make_unique<State>()) {
  thread_ = std::jthread([state = state_.get(), path = std::move(path)](std::stop_token stop) {
    std::optional<std::string> digest;
    std::exception_ptr error;
    try {
      digest = file_sha256(path, stop);
    } catch (...) {
      error = std::current_exception();
    }
    const std::lock_guard lock(state->mutex);
    state->digest = std::move(digest);
    state->error = error;
    state->changed.notify_all();
  });
}

DataDigest::~DataDigest() = default;  // thread_ (declared last) asks the hashing to stop and joins first

bool DataDigest::ready() const {
  const std::lock_guard lock(state_->mutex);
  return state_->digest || state_->error;
}

const std::string& DataDigest::get() {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait(lock, [&] { return state_->digest || state_->error; });
  if (state_->error) std::rethrow_exception(state_->error);
  return *state_->digest;
}

}  // namespace tqlab
