// tqlab sweep --config F: the main job (src/sweep/sweep.h). Reads and checks
// the config (or the results it re-runs) and the data before any work, runs
// every (run, layer, head) of the sweep or of its shard (--shard K/N) as a job
// (src/job/run_sweep_job.h: journalled, resumable, stopped cleanly by SIGINT and
// SIGTERM, one document written atomically) and prints a summary table.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/error.h"
#include "core/log.h"
#include "core/stop_signals.h"
#include "core/text.h"
#include "job/run_sweep_job.h"
#include "metrics/needle.h"
#include "sweep/sweep.h"
#include "sweep/sweep_results.h"

namespace tqlab::cli {
namespace {

struct SweepCommandOptions {
  std::string config;
  std::string out;
  std::string data;
  std::string layers;
  std::string seeds;
  int threads = 0;
  bool quiet = false;
  std::string shard;
  bool resume = false;
};

// A word as a shell reads it back.
std::string shell_word(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=,:+@%") ==
          std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The command that goes on with a stopped sweep: the flags that shape it, and --resume.
std::string resume_command(const SweepCommandOptions& options, const std::string& out) {
  std::string command = "tqlab sweep --config " + shell_word(options.config) + " --out " + shell_word(out);
  if (!options.shard.empty()) command += " --shard " + shell_word(options.shard);
  if (!options.data.empty()) command += " --data " + shell_word(options.data);
  if (!options.layers.empty()) command += " --layers " + shell_word(options.layers);
  if (!options.seeds.empty()) command += " --seeds " + shell_word(options.seeds);
  return command + " --resume";
}

// What the progress line says a unit is of.
std::string unit_label(int layer) {
  if (layer == kModelProgress) return "model";
  return layer >= 0 ? fmt::format("layer {}", layer) : std::string("synthetic needle");
}

void warn_unmeasured_needles(const SweepResults& results) {
  if (results.needle_trials_measured < results.needle_trials) {
    log::warn("needle: {} of {} planted-needle trials were not measured (a slab that lost tokens, a zero query, or "
              "a query so short that its needle would be over {}x the longest key; 'needle.unmeasured_trials')",
              results.needle_trials - results.needle_trials_measured, results.needle_trials, kMaxPlantedKeyNormRatio);
  }
}

// The config, with the flags that override it; the output checked before any work.
SweepConfig configured_sweep(const SweepCommandOptions& options, const SweepConfigSource& source) {
  SweepConfig config = source.config;
  // Flags win over the config; their paths are the user's, relative to where they stand.
  if (!options.data.empty()) {
    config.data.path = options.data;
    config.data.resolved_path = options.data;
  }
  if (!options.out.empty()) config.out = options.out;
  if (!options.layers.empty()) config.data.kv.layers = parse_layer_list(options.layers);
  if (!options.seeds.empty()) config.seeds = parse_seed_list(options.seeds, "sweep");
  if (config.out.empty()) {
    fail("sweep: no output file: set \"out\" in '{}' or pass --out FILE", options.config);
  }
  std::vector<CommandInput> inputs = config_inputs(config);
  inputs.push_back({options.config, source.from_results ? "the results file being re-run" : "the config"});
  guard_output("sweep", options.out.empty() ? fmt::format("\"out\" of '{}'", options.config) : "--out", config.out,
               inputs);
  return config;
}

void warn_plan(const SweepPlan& plan) {
  std::vector<std::string> said;
  for (const std::string& warning : plan.warnings) {
    if (std::find(said.begin(), said.end(), warning) != said.end()) continue;
    said.push_back(warning);
    log::warn("{}", warning);
  }
}

// What the job says before its work starts: its journal's warnings and notes, and what it measures.
void announce_job(const SweepPlan& plan, const SweepJobSpec& spec, const SweepJob& job, bool quiet) {
  for (const std::string& warning : job.warnings()) log::warn("{}", warning);
  if (quiet) return;
  for (const std::string& note : job.notes()) log::info("{}", note);
  const std::string part = spec.shard ? fmt::format(" shard {} ({} units)", spec.shard->text(), job.units()) : "";
  if (plan.dump) {
    log::info("sweep '{}'{}: {} runs x {} seeds over {} layers of '{}'", plan.config.name, part, plan.runs.size(),
              plan.config.seeds.size(), plan.dump->layers().size(),
              plan.generated_data ? "the model's own Q/K/V" : plan.config.data.path);
  }
  if (plan.model) {
    log::info("sweep '{}'{}: {} runs x {} seeds end to end through '{}' ({} chunks of {} tokens)", plan.config.name,
              part, plan.runs.size(), plan.config.seeds.size(), plan.config.model->path, plan.model->chunks,
              plan.model->options.ctx);
  }
}

// The outcome, as the user reads it: the exit code.
int report_outcome(const SweepPlan& plan, const SweepJobRequest& request, const SweepJobOutcome& outcome,
                   bool quiet) {
  const SweepTiming& timing = outcome.results.timing;
  if (outcome.status == SweepJobStatus::finished_before) {
    const std::string what = request.spec.shard ? fmt::format("shard {}", request.spec.shard->text()) : "sweep";
    if (!quiet) log::info("'{}' already holds this {}'s finished document: nothing to do", plan.config.out, what);
    return kExitOk;
  }
  if (outcome.status == SweepJobStatus::stopped) {
    const int signal = StopSignals::received();
    log::error("sweep stopped by {}: {} of {} units are kept in '{}'; to go on: {}", signal_name(signal),
               outcome.done_units, outcome.units, outcome.journal_path, request.resume_command);
    return signal_exit_code(signal);
  }
  if (request.spec.shard) {
    if (!quiet) {
      log::info("wrote {} (shard {}: {} units, {:.1f} s on {} threads)", plan.config.out, request.spec.shard->text(),
                outcome.units, timing.total_seconds, timing.threads);
    }
    return kExitOk;
  }
  warn_unmeasured_needles(outcome.results);
  fmt::print("{}", sweep_results_table(plan, outcome.results));
  if (!quiet) {
    log::info("wrote {} ({} runs, {:.1f} s on {} threads)", plan.config.out, outcome.results.runs.size(),
              timing.total_seconds, timing.threads);
  }
  return kExitOk;
}

int run_sweep_command(const SweepCommandOptions& options) {
  const SweepConfigSource source = load_sweep_config_source(options.config);
  SweepConfig config = configured_sweep(options, source);
  SweepJobRequest request;
  if (!options.shard.empty()) request.spec.shard = parse_shard_spec(options.shard);
  request.spec.resume = options.resume;
  // From here on SIGINT and SIGTERM stop the sweep between units (core/stop_signals.h).
  const StopSignals stop_signals;

  SweepPlan planned = plan_sweep(std::move(config), PlanOptions{options.threads});
  apply_recorded_origins(source, planned);
  const SweepPlan& plan = planned;
  warn_plan(plan);

  ProgressLine progress(fmt::format("sweep {}", plan.config.name), !options.quiet);
  request.threads = options.threads;
  request.resume_command = resume_command(options, plan.config.out);
  request.source = &source;
  request.stop_requested = [] { return StopSignals::received() != 0; };
  request.on_start = [&](const SweepJob& job) { announce_job(plan, request.spec, job, options.quiet); };
  request.on_progress = [&](std::size_t done, std::size_t total, int layer) {
    progress.update(done, total, unit_label(layer));
  };
  request.on_computed = [&] { progress.finish(); };
  request.on_warning = [](const std::string& warning) { log::warn("{}", warning); };
  const SweepJobOutcome outcome = run_sweep_job(plan, request);
  return report_outcome(plan, request, outcome, options.quiet);
}

}  // namespace

void setup_sweep(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<SweepCommandOptions>();
  auto* command = app.add_subcommand(
      "sweep",
      command_description(
          "The main job: a grid of K/V quantizer runs over a KV dump",
          "Metrics in one tqlab.sweep/1 document, alike for any --threads; --shard K/N, --resume, re-runs.",
          "tqlab-sweep"));
  command->add_option("--config", options->config, "Sweep config (JSON)")->required();
  command->add_option("--out", options->out, "Results file (overrides the config's \"out\")");
  command->add_option("--data", options->data, "Tensor file to sweep (overrides data.path)");
  add_threads_option(*command, options->threads);
  add_seeds_options(*command, options->seeds, "default: the config's seeds");
  command->add_option("--layers", options->layers, "Layers: all, or e.g. 0,2,5-7 (overrides data.layers)");
  command->add_option("--shard", options->shard,
                      "Compute shard K of N (K from 1, as split -n K/N) and write a tqlab.shard/1 document");
  command->add_flag("--resume", options->resume,
                    "Go on from the journal of an interrupted run (OUT.journal); keep a finished output");
  add_quiet_flag(*command, options->quiet);
  command->callback([options, &exit_code] { exit_code = run_sweep_command(*options); });
}

}  // namespace tqlab::cli
