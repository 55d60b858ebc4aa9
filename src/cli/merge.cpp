// tqlab merge SHARD... -o OUT: the shards of one sweep (tqlab sweep --shard K/N)
// joined into the results document the whole sweep writes
// (src/sweep/sweep_merge.h), and its summary table; or the shards of one
// allocation profile (tqlab allocate --shard K/N) joined into the profile
// (src/allocate/profile_shard.h) that tqlab allocate --profile-file solves.
#include <memory>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "allocate/profile_cache.h"
#include "allocate/profile_shard.h"
#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "job/sweep_merge.h"
#include "sweep/sweep_results.h"

namespace tqlab::cli {
namespace {

struct MergeCommandOptions {
  std::vector<std::string> shards;
  std::string out;
  bool quiet = false;
};

int merge_profile(const MergeCommandOptions& options) {
  const Profile profile = merge_profile_shards(options.shards);
  write_cached_profile(options.out, profile);
  fmt::print("{} profile: {} units x {} candidates x {} seeds, content key {}\n", profile_kind_name(profile.kind),
             profile.units.size(), profile.candidates.size(), profile.seeds.size(), profile.content_key.substr(0, 16));
  if (!options.quiet) {
    log::info("wrote {} ({} shards; solve it with tqlab allocate --profile-file {})", options.out,
              options.shards.size(), options.out);
  }
  return kExitOk;
}

int run_merge(const MergeCommandOptions& options) {
  std::vector<CommandInput> inputs;
  for (const std::string& shard : options.shards) inputs.push_back({shard, "a shard"});
  guard_output("merge", "-o", options.out, inputs);
  if (is_profile_shard_file(options.shards.front())) return merge_profile(options);
  MergedSweep merged = merge_shards(options.shards, options.out);
  for (const std::string& warning : merged.warnings) log::warn("merge: {}", warning);
  SweepResults results = summarize_sweep(merged.plan, merged.totals);
  results.timing = merged.timing;
  AtomicFileWriter writer(options.out);
  writer.write(sweep_results_json(merged.plan, results, merged.data).dump(1) + "\n");
  writer.commit();
  fmt::print("{}", sweep_results_table(merged.plan, results));
  if (!options.quiet)
    log::info("wrote {} ({} shards, {} runs)", options.out, options.shards.size(), results.runs.size());
  return kExitOk;
}

}  // namespace

void setup_merge(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<MergeCommandOptions>();
  auto* command = app.add_subcommand(
      "merge", command_description("Join the shards of one sweep, or of one allocation profile",
                                   "Checks one config, one data and every unit once; writes what the unsharded "
                                   "run writes.",
                                   "tqlab-merge"));
  command
      ->add_option("shards", options->shards,
                   "tqlab.shard/1 (sweep --shard) or tqlab.profile-shard/1 (allocate --shard) documents")
      ->required();
  add_output_option(*command, options->out, "Results file (tqlab.sweep/1), or profile (tqlab.profile/1)",
                    "-o,--out")
      ->required();
  add_quiet_flag(*command, options->quiet);
  command->callback([options, &exit_code] { exit_code = run_merge(*options); });
}

}  // namespace tqlab::cli
