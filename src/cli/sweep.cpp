// tqlab sweep --config F: the main job (src/sweep/sweep.h). Reads and checks
// the config (or the results it re-runs) and the data before any work, runs
// every (run, layer, head) of the sweep or of its shard (--shard K/N) as a job
// (src/sweep/sweep_job.h: journalled, resumable, stopped cleanly by SIGINT and
// SIGTERM), writes one document atomically and prints a summary table.
#include <chrono>
#include <filesystem>
#include <functional>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/stop_signals.h"
#include "core/text.h"
#include "metrics/needle.h"
#include "sweep/sweep.h"
#include "sweep/sweep_job.h"
#include "sweep/sweep_rerun.h"
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

int run_sweep_command(const SweepCommandOptions& options) {
  SweepConfigSource source = load_sweep_config_source(options.config);
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
  SweepJobSpec job_spec;
  if (!options.shard.empty()) job_spec.shard = parse_shard_spec(options.shard);
  job_spec.resume = options.resume;
  // From here on SIGINT and SIGTERM stop the sweep between units (core/stop_signals.h).
  const StopSignals stop_signals;

  SweepPlan planned = plan_sweep(std::move(config), PlanOptions{options.threads});
  apply_recorded_origins(source, planned);
  const SweepPlan& plan = planned;
  std::vector<std::string> said;
  for (const std::string& warning : plan.warnings) {
    if (std::find(said.begin(), said.end(), warning) != said.end()) continue;
    said.push_back(warning);
    log::warn("{}", warning);
  }
  // The journal beside the output proves the folder writable before any compute.
  SweepJob job(plan, job_spec);
  const std::string what = job_spec.shard ? fmt::format("shard {}", job_spec.shard->text()) : std::string("sweep");
  if (job.finished()) {
    if (!options.quiet) {
      log::info("'{}' already holds this {}'s finished document: nothing to do", plan.config.out, what);
    }
    return kExitOk;
  }
  for (const std::string& warning : job.warnings()) log::warn("{}", warning);
  if (!options.quiet) {
    for (const std::string& note : job.notes()) log::info("{}", note);
  }

  ProgressLine progress(fmt::format("sweep {}", plan.config.name), !options.quiet);
  SweepOptions sweep_options;
  sweep_options.threads = options.threads;
  sweep_options.on_progress = [&](std::size_t done, std::size_t total, int layer) {
    progress.update(done, total, unit_label(layer));
  };
  job.attach(sweep_options, [] { return StopSignals::received() != 0; });
  if (!options.quiet) {
    const std::string part =
        job_spec.shard ? fmt::format(" shard {} ({} units)", job_spec.shard->text(), job.units()) : "";
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
  SweepResults results;
  SweepTotals shard_totals;
  try {
    if (job_spec.shard) {
      const auto start = std::chrono::steady_clock::now();
      shard_totals = compute_sweep_totals(plan, sweep_options, results.timing);
      results.timing.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } else {
      results = run_sweep(plan, sweep_options);
    }
  } catch (const SweepStopped&) {
    progress.finish();
    const int signal = StopSignals::received();
    log::error("sweep stopped by {}: {} of {} units are kept in '{}'; to go on: {}", signal_name(signal),
               job.done_units(), job.units(), job.journal_path(), resume_command(options, plan.config.out));
    return signal_exit_code(signal);
  } catch (const JournalWriteError&) {
    throw;  // the journal keeps what was done
  } catch (...) {
    job.abandon();  // bad data: no resume can mend it
    throw;
  }
  progress.finish();
  for (const std::string& difference : rerun_differences(source, job.data_identity())) log::warn("{}", difference);
  // Writing the output: a failure (disk full, folder gone) leaves the journal for --resume.
  const auto writing = [&](const std::function<void()>& write) {
    try {
      write();
    } catch (const InputError& error) {
      std::error_code missing;
      if (!std::filesystem::exists(job.journal_path(), missing)) throw;
      fail("{}; the computed units are kept in '{}': make room, then run: {}", error.what(), job.journal_path(),
           resume_command(options, plan.config.out));
    }
  };
  if (job_spec.shard) {
    writing([&] { job.write_shard(shard_totals, results.timing); });
    job.complete();
    if (!options.quiet) {
      log::info("wrote {} (shard {}: {} units, {:.1f} s on {} threads)", plan.config.out, job_spec.shard->text(),
                job.units(), results.timing.total_seconds, results.timing.threads);
    }
    return kExitOk;
  }
  warn_unmeasured_needles(results);

  writing([&] {
    AtomicFileWriter writer(plan.config.out);
    writer.write(sweep_results_json(plan, results, job.data_identity()).dump(1) + "\n");
    writer.commit();
  });
  job.complete();
  fmt::print("{}", sweep_results_table(plan, results));
  if (!options.quiet) {
    log::info("wrote {} ({} runs, {:.1f} s on {} threads)", plan.config.out, results.runs.size(),
              results.timing.total_seconds, results.timing.threads);
  }
  return kExitOk;
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
