// What identifies a sweep and its data across processes, machines and time:
// the config's hash and the data file's identity (DataIdentity, sweep_plan.h).
//
// Config hash: the sha256 of the resolved config as the results document
// writes it ("config", sweep_config_json.h), as compact JSON with every object's
// keys sorted (so a document read back in any key order hashes the same), and
// the paths left out ("data.path", "model.path", ".tokens", ".text",
// ".tokenizer"): the data's identity is its sha256, checked on its own, and two
// nodes may see one file under two paths. Two runs with one hash measure the same
// runs, seeds, metrics and layers of the same tensors; shards, journals and
// merges are matched by it.
//
// The config a document carries is itself a config, read as if it lived where
// the document does (sweep_config_json.h).
#pragma once

#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include <nlohmann/json_fwd.hpp>

#include "sweep/sweep_config.h"
#include "sweep/sweep_plan.h"

namespace tqlab {

/// The hash of a document's "config" section (see above), 64 hex digits.
std::string sweep_config_hash(const nlohmann::json& config_section);
std::string sweep_config_hash(const nlohmann::ordered_json& config_section);
/// The hash of the config section `plan` writes.
std::string sweep_config_hash(const SweepPlan& plan);

/// What identifies the inputs of a sweep that reads no data file: the dump its
/// model block made (its size and sha256) or, without a dump (end to end only),
/// the model and its tokens: the weights' bytes, and the sha256 of the
/// config's, every weight file's, the tokens' and the tokenizer's sha256, one
/// per line. nullopt for a sweep of a data file.
std::optional<DataIdentity> model_input_identity(const SweepPlan& plan);

/// The same, from a results document's "model" and "tokens" sections (of a
/// sweep without a dump).
DataIdentity model_input_identity(const nlohmann::json& results);

/// The sha256 of a file, computed on a thread of its own while the sweep runs.
/// Destroying it stops the hashing early (a stopped job does not wait for it).
class DataDigest {
 public:
  explicit DataDigest(std::string path);
  ~DataDigest();
  DataDigest(const DataDigest&) = delete;
  DataDigest& operator=(const DataDigest&) = delete;

  /// Whether get() would return at once.
  bool ready() const;
  /// Waits for the digest; the hashing's InputError (file unreadable) is thrown here.
  const std::string& get();

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::jthread thread_;
};

}  // namespace tqlab
