#include "job/sweep_merge.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/index.h"
#include "core/text.h"
#include "job/shard_coverage.h"
#include "job/shard_document.h"
#include "job/sweep_identity.h"
#include "job/sweep_shard.h"
#include "sweep/work_units.h"

namespace tqlab {
namespace {

std::string short_hash(const std::string& hash) { return hash.substr(0, 12) + "…"; }

std::string name_of(const ShardDocument& shard) {
  return fmt::format("'{}' ({})", printable(shard.path), shard.shard.text());
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
      fail(
          "merge: the model and tokens the shards name now give sha256 {} ({} bytes), the shards measured {} ({} "
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

}  // namespace

MergedSweep merge_shards(const std::vector<std::string>& paths, const std::string& out) {
  if (paths.empty()) fail("merge: no shard documents given");
  std::vector<ShardDocument> shards;
  for (const std::string& path : paths) shards.push_back(read_shard_document(path));

  std::vector<ShardClaim> claims;
  for (const ShardDocument& shard : shards) {
    claims.push_back(
        {shard.path,
         shard.shard,
         {{"another config", "config hash", shard.config_hash}, {"other data", "sha256", shard.data.sha256}},
         shard.held});
  }
  std::vector<std::string> problems;
  std::vector<bool> used = shards_of_one_job(claims, problems);
  std::size_t reference = 0;
  while (reference < shards.size() && !used[reference]) ++reference;
  if (reference == shards.size()) fail_on_problems("merge", problems);

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

  check_shard_coverage(
      claims, used, units.count(), [&](int count) { return assign_shards(merged.plan, units, count); }, problems);
  fail_on_problems("merge", problems);

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
