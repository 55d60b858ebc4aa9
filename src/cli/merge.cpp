// tqlab merge SHARD... -o OUT: the shards of one sweep (tqlab sweep --shard K/N)
// joined into the results document the whole sweep writes
// (src/sweep/sweep_merge.h), and its summary table.
#include <memory>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "sweep/sweep_merge.h"
#include "sweep/sweep_results.h"

namespace tqlab::cli {
namespace {

struct MergeCommandOptions {
  std::vector<std::string> shards;
  std::string out;
  bool quiet = false;
};

int run_merge(const MergeCommandOptions& options) {
  for (const std::string& shard : options.shards) {
    if (same_file(shard, options.out))
      fail("merge: the output '{}' is the shard '{}'; choose another output", options.out, shard);
  }
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
      "merge", command_description("Join the shards of one sweep into its results document",
                                   "Checks one config, one data and every unit once; writes what the unsharded "
                                   "sweep writes.",
                                   "tqlab-merge"));
  command->add_option("shards", options->shards, "tqlab.shard/1 documents of tqlab sweep --shard K/N")->required();
  command->add_option("-o,--out", options->out, "Results file (tqlab.sweep/1)")->required();
  command->add_flag("--quiet", options->quiet, "No informational messages");
  command->callback([options, &exit_code] { exit_code = run_merge(*options); });
}

}  // namespace tqlab::cli
