// The tqlab.shard/1 document: one shard's part of a sweep (sweep_shard.h),
// holding everything `tqlab merge` needs and nothing else: the totals of the
// units it holds and the kept values of its KL tails, never a mean.
//
// {"schema": "tqlab.shard/1",
//  "tqlab": {"version", "git_commit", "blas", "kernels"},
//  "shard": {"index": K, "count": N},
//  "config_hash": sweep_identity.h's hash of "config",
//  "config": the resolved config (sweep_results.h), its data.path relative to
//            this file's folder,
//  "origins": [per run: where the config asked for it, for the results],
//  "data": {"path": as the sweep was given it, "bytes", "sha256"},
//  "model": null, or with a model block {"path", "config_sha256", "chunks"}
//           (what it is; its identity is in "data", sweep_identity.h),
//  "work": {"units": units of the whole sweep, "items", "synthetic_trials",
//           "run_seeds", "model_chunks", "holds": [[first, last], ...] the
//           units held, as inclusive ranges, ascending},
//  "units": [every unit held, ascending: totals_json.h's form, without "kl"],
//  "kl_tails": [per (run, seed): {"all": tail, "layers": [per layer index: tail],
//               "heads": [per layer index: [per q head: tail]] (per_head only)}]
//              (absent without attention; a tail is totals_json.h's [count, [kept]]),
//  "timing": sweep_results.h's timing section}
//
// Invariants the reader checks: "units" holds exactly the units "holds"
// names, once each; every tail keeps min(count, capacity) values. Whether the
// shard fits a sweep (sizes, capacities) is checked when merging.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "job/sweep_shard.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_results.h"
#include "sweep/sweep_runner.h"
#include "sweep/work_units.h"

namespace tqlab {

class JsonReader;

inline constexpr std::string_view kShardSchema = "tqlab.shard/1";

/// One (run, seed)'s KL tails as a shard holds them.
struct KlTailsPart {
  KlPart all;
  std::vector<KlPart> layers;              ///< per layer index
  std::vector<std::vector<KlPart>> heads;  ///< per layer index, q head (per_head only)
};

struct ShardDocument {
  std::string path;  ///< the file it was read from
  ShardSpec shard;
  std::string config_hash;
  std::string config_text;  ///< the "config" section, as compact JSON
  std::vector<std::string> origins;
  std::string data_path;  ///< "data.path"
  DataIdentity data;
  std::string version, git_commit;
  int units = 0, items = 0, synthetic_trials = 0, run_seeds = 0, model_chunks = 0;
  std::vector<int> held;                ///< ascending
  std::vector<UnitTotals> unit_totals;  ///< in `held` order
  std::vector<KlTailsPart> kl_tails;    ///< per (run, seed); empty without attention
  SweepTiming timing;
};

/// The document of shard `shard` of `plan`, holding `held` (ascending, every
/// one done in `totals`). plan.config.out is where it will be written.
nlohmann::ordered_json shard_document_json(const SweepPlan& plan, const ShardSpec& shard, const std::vector<int>& held,
                                           const SweepTotals& totals, const DataIdentity& data,
                                           const SweepTiming& timing);

/// Reads `path`. InputError "shard 'PATH': ..." when it is not a tqlab.shard/1
/// document (naming the schema it is), or names the key path of what is wrong.
ShardDocument read_shard_document(const std::string& path);

/// Whether `path` is a tqlab.shard/1 document of `shard` of the sweep with
/// `config_hash` over data of `data_bytes` bytes and `data_sha256`: a finished
/// shard a resubmission may keep. False for a missing or unreadable file.
bool is_finished_shard(const std::string& path, const ShardSpec& shard, const std::string& config_hash,
                       std::uint64_t data_bytes, const std::string& data_sha256);

/// The tails of `totals`, one part per (run, seed).
std::vector<KlTailsPart> kl_tails_parts(const SweepTotals& totals);

/// Adds one (run, seed)'s shard tails to `tails`. InputError starting with `what`
/// when the part has other layers or heads, or does not keep what the tails need.
void add_kl_tails_part(KlTails& tails, const KlTailsPart& part, const std::string& what);

/// Checks that `root` is a shard document of `schema` (tqlab.shard/1, tqlab.profile-shard/1):
/// InputError "not a SCHEMA document but OTHER" naming the file, followed by `hint` when OTHER is
/// `near_schema` (the finished document a shard is mistaken for).
void expect_shard_schema(const JsonReader& root, std::string_view schema, std::string_view near_schema,
                         std::string_view hint);

/// What every shard document opens with: "tqlab": {"version", "git_commit"} (who computed it) and
/// "shard": {"index": K, "count": N}, 1 <= K <= N <= kMaxShards.
struct ShardHeader {
  std::string version, git_commit;
  ShardSpec shard;
};
ShardHeader read_shard_header(const JsonReader& root);

/// "1-5,7,9-12": ascending units as inclusive ranges, for messages and "holds".
std::vector<std::pair<int, int>> unit_ranges(const std::vector<int>& units);
std::string describe_unit_ranges(const std::vector<int>& units);

/// "holds": [[first, last], ...] of ascending units, and reading it back: InputError naming the
/// key path unless the ranges ascend, do not touch, and stay below `units`.
nlohmann::ordered_json unit_ranges_json(const std::vector<int>& units);
std::vector<int> read_unit_ranges(const JsonReader& ranges, int units);

}  // namespace tqlab
