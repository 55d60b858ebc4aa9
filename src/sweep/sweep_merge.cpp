#include "sweep/sweep_merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/index.h"
#include "core/text.h"
#include "sweep/shard_document.h"
#include "sweep/sweep_identity.h"
#include "sweep/sweep_shard.h"
#include "sweep/work_units.h"

namespace tqlab {
namespace {

std::string short_hash(const std::string& hash) { return hash.substr(0, 12) + "…"; }

std::string name_of(const ShardDocument& shard) {
  return fmt::format("'{}' ({})", printable(shard.path), shard.shard.text());
}

bool same_path(const std::string& a, const std::string& b) {
  std::error_code error;
  return std::filesystem::equivalent(a, b, error);
}

// The shard group most files agree on (config hash, data sha256); on a tie the first file's.
std::pair<std::string, std::string> reference_of(const std::vector<ShardDocument>& shards) {
  std::map<std::pair<std::string, std::string>, int> votes;
  for (const ShardDocument& shard : shards) ++votes[{shard.config_hash, shard.data.sha256}];
  std::pair<std::string, std::string> best{shards.front().config_hash, shards.front().data.sha256};
  for (const ShardDocument& shard : shards) {
    const std::pair<std::string, std::string> key{shard.config_hash, shard.data.sha256};
    if (votes[key] > votes[best]) best = key;
  }
  return best;
}

SweepPlan plan_of(const ShardDocument& shard, const std::string& out) {
  const nlohmann::json section = nlohmann::json::parse(shard.config_text);
  SweepConfig config = parse_sweep_config(section, shard.path);
  config.config_path = shard.path;
  config.out = out;
  config.data.path = shard.data_path;  // as the sweep was given it, for the results' data section
  SweepPlan plan = plan_sweep(std::move(config));
  if (plan.runs.size() != shard.origins.size()) {
    fail("merge: '{}' names the origins of {} runs, its config has {}", printable(shard.path), shard.origins.size(),
         plan.runs.size());
  }
  for (std::size_t run = 0; run < plan.runs.size(); ++run) plan.runs[run].origin = shard.origins[run];
  const std::string hash = sweep_config_hash(plan);
  if (hash != shard.config_hash) {
    fail(
        "merge: the config in '{}' reads back as config hash {}, not the {} it was computed with (written by "
        "tqlab {}?)",
        printable(shard.path), short_hash(hash), short_hash(shard.config_hash), shard.version);
  }
  if (const std::optional<DataIdentity> model = model_input_identity(plan)) {
    // The model block's own dump, made again here, or its weights and tokens.
    if (*model != shard.data) {
      fail("merge: the model and tokens the shards name now give sha256 {} ({} bytes), the shards measured {} ({} "
           "bytes)",
           short_hash(model->sha256), model->bytes, short_hash(shard.data.sha256), shard.data.bytes);
    }
    return plan;
  }
  std::error_code error;
  const std::uint64_t bytes = std::filesystem::file_size(plan.config.data.resolved_path, error);
  if (error || bytes != shard.data.bytes) {
    fail("merge: the data '{}' the shards name has {} bytes, the shards measured {} bytes (sha256 {})",
         printable(plan.config.data.resolved_path), error ? 0 : bytes, shard.data.bytes, short_hash(shard.data.sha256));
  }
  return plan;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : std::string(separator)) + part;
  return text;
}

}  // namespace

MergedSweep merge_shards(const std::vector<std::string>& paths, const std::string& out) {
  if (paths.empty()) fail("merge: no shard documents given");
  std::vector<ShardDocument> shards;
  for (const std::string& path : paths) shards.push_back(read_shard_document(path));

  std::vector<std::string> problems;
  std::vector<bool> used(shards.size(), true);
  const auto [config_hash, data_sha256] = reference_of(shards);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const ShardDocument& shard = shards[i];
    if (shard.config_hash != config_hash) {
      problems.push_back(fmt::format("{} is foreign: another config (config hash {}, the others' {})", name_of(shard),
                                     short_hash(shard.config_hash), short_hash(config_hash)));
      used[i] = false;
    } else if (shard.data.sha256 != data_sha256) {
      problems.push_back(fmt::format("{} is foreign: other data (sha256 {}, the others' {})", name_of(shard),
                                     short_hash(shard.data.sha256), short_hash(data_sha256)));
      used[i] = false;
    }
  }
  for (std::size_t i = 0; i < shards.size(); ++i) {
    for (std::size_t j = 0; j < i && used[i]; ++j) {
      if (!used[j]) continue;
      if (same_path(shards[i].path, shards[j].path)) {
        problems.push_back(fmt::format("'{}' is given twice", printable(shards[i].path)));
        used[i] = false;
      } else if (shards[i].shard == shards[j].shard) {
        problems.push_back(fmt::format("'{}' and '{}' are duplicates: both are shard {}", printable(shards[j].path),
                                       printable(shards[i].path), shards[i].shard.text()));
        used[i] = false;
      }
    }
  }
  std::size_t reference = 0;
  while (reference < shards.size() && !used[reference]) ++reference;
  if (reference == shards.size()) fail("merge: {}", join(problems, "; "));

  MergedSweep merged;
  merged.plan = plan_of(shards[reference], out);
  const WorkUnits units(merged.plan);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const ShardDocument& shard = shards[i];
    if (!used[i]) continue;
    if (shard.units != units.count() || shard.run_seeds != units.run_seeds().count()) {
      problems.push_back(fmt::format("{} is of a sweep of {} units x {} (run, seed) pairs, the config's has {} x {}",
                                     name_of(shard), shard.units, shard.run_seeds, units.count(),
                                     units.run_seeds().count()));
      used[i] = false;
    }
    if (shard.version != shards[reference].version || shard.git_commit != shards[reference].git_commit) {
      merged.warnings.push_back(fmt::format("{} was computed by tqlab {} ({}), {} by {} ({})", name_of(shard),
                                            shard.version, shard.git_commit, name_of(shards[reference]),
                                            shards[reference].version, shards[reference].git_commit));
    }
  }

  // Coverage: who holds each unit.
  std::vector<int> holder(static_cast<std::size_t>(units.count()), -1);
  std::map<std::pair<int, int>, std::vector<int>> overlaps;  // (shard, shard) -> units both hold
  std::set<int> counts;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    if (!used[i]) continue;
    counts.insert(shards[i].shard.count);
    for (int unit : shards[i].held) {
      int& first = at(holder, unit);
      if (first < 0) {
        first = static_cast<int>(i);
      } else {
        overlaps[{first, static_cast<int>(i)}].push_back(unit);
      }
    }
  }
  for (const auto& [pair, shared] : overlaps) {
    problems.push_back(fmt::format("{} and {} overlap: both hold units {}", name_of(shards[pair.first]),
                                   name_of(shards[pair.second]), describe_unit_ranges(shared)));
  }
  std::vector<int> missing;
  for (int unit = 0; unit < units.count(); ++unit) {
    if (at(holder, unit) < 0) missing.push_back(unit);
  }
  if (!missing.empty() && counts.size() == 1) {
    const int count = *counts.begin();
    const std::vector<int> owner = assign_shards(merged.plan, units, count);
    std::map<int, std::vector<int>> by_shard;
    for (int unit : missing) by_shard[at(owner, unit)].push_back(unit);
    for (const auto& [index, lost] : by_shard) {
      problems.push_back(fmt::format("shard {}/{} is missing (units {})", index, count, describe_unit_ranges(lost)));
    }
  } else if (!missing.empty()) {
    problems.push_back(fmt::format("units {} are missing: in none of the shards", describe_unit_ranges(missing)));
  }
  if (!problems.empty()) {
    fail("merge: {} problem{}: {}", problems.size(), problems.size() == 1 ? "" : "s", join(problems, "; "));
  }

  const SweepPlan& plan = merged.plan;
  merged.totals = empty_plan_totals(plan, units);
  for (ShardDocument& shard : shards) {
    const std::string what = fmt::format("merge: {}", name_of(shard));
    try {
      for (UnitTotals& unit : shard.unit_totals)
        add_unit_totals(merged.totals, units, std::move(unit), UnitKl::in_tails);
    } catch (const InputError& error) {
      fail("{}: {}", what, error.what());
    }
    if (shard.kl_tails.size() != merged.totals.kl_tails.size()) {
      fail("{}: KL tails of {} (run, seed) pairs, the sweep has {}", what, shard.kl_tails.size(),
           merged.totals.kl_tails.size());
    }
    for (std::size_t rs = 0; rs < shard.kl_tails.size(); ++rs) {
      add_kl_tails_part(merged.totals.kl_tails[rs], shard.kl_tails[rs], what);
    }
    merged.timing.total_seconds += shard.timing.total_seconds;
    merged.timing.read_seconds += shard.timing.read_seconds;
    merged.timing.quantize_seconds += shard.timing.quantize_seconds;
    merged.timing.attention_seconds += shard.timing.attention_seconds;
    merged.timing.needle_seconds += shard.timing.needle_seconds;
    merged.timing.model_base_seconds += shard.timing.model_base_seconds;
    merged.timing.model_runs_seconds += shard.timing.model_runs_seconds;
    merged.timing.threads = std::max(merged.timing.threads, shard.timing.threads);
  }
  merged.data = shards[reference].data;
  return merged;
}

}  // namespace tqlab
