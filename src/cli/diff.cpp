// tqlab diff A.json B.json: two results documents compared run by run, metric
// by metric (src/results/results_diff.h); a table on stdout or tqlab.diff/1 JSON.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "results/results_diff.h"

namespace tqlab::cli {
namespace {

struct DiffCommandOptions {
  std::string a, b;
  DiffOptions diff;
  bool json = false;
};

int run_diff(const DiffCommandOptions& command) {
  const DiffResult result = diff_results_files(command.a, command.b, command.diff);
  if (command.json) {
    // stdout is the document: warnings go to stderr as well, where a person sees them.
    for (const std::string& warning : result.warnings) log::warn("{}", warning);
    fmt::print("{}\n", diff_json(result).dump(2));
  } else {
    fmt::print("{}", diff_text(result));
  }
  return result.exit_code();
}

}  // namespace

void setup_diff(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DiffCommandOptions>();
  auto* command = app.add_subcommand(
      "diff",
      command_description("Compare two results documents of one schema, row by row",
                          "Exit 0 no difference beyond the tolerances, 1 differences, 2 errors.", "tqlab-diff"));
  command->add_option("a", options->a, "The old results file (A)")->required();
  command->add_option("b", options->b, "The new results file (B)")->required();
  command->add_option("--rtol", options->diff.rtol,
                      "Numbers a, b differ when |b - a| > max(atol, rtol * max(|a|, |b|))")
      ->capture_default_str();
  command->add_option("--atol", options->diff.atol, "Absolute tolerance, see --rtol")->capture_default_str();
  command->add_option("--metric", options->diff.metrics,
                      "Compare only this quantity (repeatable); a name also selects its variants: needle_top1 selects "
                      "needle_top1@0.5, theorem1 selects theorem1.upper_bound")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command->add_flag("--timing", options->diff.timing, "Compare \"timing\" sections too");
  command->add_flag("--ignore-within-se", options->diff.ignore_within_se,
                    "Changes within the combined standard error do not count for the exit code");
  command->add_flag("--json", options->json, "Print the comparison as JSON (schema tqlab.diff/1) instead of a table");
  command->callback([options, &exit_code] { exit_code = run_diff(*options); });
}

}  // namespace tqlab::cli
