// tqlab report RESULTS.json: a sweep's runs as a Markdown or CSV table, the
// Pareto front of bits_kv vs attn_kl marked (src/results/results_report.h).
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "results/results_report.h"

namespace tqlab::cli {
namespace {

struct ReportCommandOptions {
  std::string results;
  std::string format = "md";
  std::vector<std::string> metrics;
  std::string out = "-";
};

int run_report(const ReportCommandOptions& command) {
  ReportOptions options;
  const auto format = parse_report_format(command.format);
  if (!format) fail("report: --format '{}' is not a format; expected md or csv", command.format);
  options.format = *format;
  options.metrics = command.metrics;
  for (const std::string& metric : options.metrics) {
    if (metric.empty()) fail("report: --metrics holds an empty name; e.g. --metrics bits_kv,attn_kl");
  }
  if (command.out != "-") guard_output("report", "-o", command.out, {{command.results, "the results file"}});
  const SweepResultsFile results = read_sweep_results(command.results);
  write_text_file(command.out, report_text(results, options));
  if (command.out != "-") log::info("wrote {}", command.out);
  return kExitOk;
}

}  // namespace

void setup_report(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReportCommandOptions>();
  auto* command = app.add_subcommand(
      "report", command_description("A sweep's results as a Markdown or CSV table, the Pareto front marked",
                                    "Runs sorted by bits_kv, values as mean ± standard error.", "tqlab-report"));
  command->add_option("results", options->results, "Results file of tqlab sweep")->required();
  command->add_option("--format", options->format, "md (Markdown) or csv")->capture_default_str();
  command
      ->add_option("--metrics", options->metrics,
                   "Value columns, comma-separated: metric or bits names as in the results (default: bits_kv, "
                   "compression, k_rel_mse, attn_kl, attn_top1, needle_top1 at the middle margin, e2e_ppl_delta_pct, "
                   "e2e_kld, e2e_top1: those the file has)")
      ->delimiter(',');
  add_output_option(*command, options->out, "Write the table to this file ('-': stdout)", "-o,--out")
      ->capture_default_str();
  command->callback([options, &exit_code] { exit_code = run_report(*options); });
}

}  // namespace tqlab::cli
