// tqlab sweep --config F: the main job (src/sweep/sweep.h). Reads and checks
// the config and the data before any work, runs every (run, layer, head),
// writes one results document atomically and prints a summary table.
#include <filesystem>
#include <future>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/sha256.h"
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
};

int run_sweep_command(const SweepCommandOptions& options) {
  SweepConfig config = load_sweep_config(options.config);
  // Flags win over the config; their paths are the user's, relative to where they stand.
  if (!options.data.empty()) {
    config.data.path = options.data;
    config.data.resolved_path = options.data;
  }
  if (!options.out.empty()) config.out = options.out;
  if (!options.layers.empty()) config.data.kv.layers = parse_layer_list(options.layers);
  if (!options.seeds.empty()) config.seeds = parse_seed_list(options.seeds, "sweep");
  if (options.threads < 0) fail("sweep: --threads {} is negative; give a count, or 0 for every core", options.threads);
  if (config.out.empty()) {
    fail("sweep: no output file: set \"out\" in '{}' or pass --out FILE", options.config);
  }
  if (!config.data.resolved_path.empty() && same_file(config.out, config.data.resolved_path)) {
    fail("sweep: the output '{}' is the input data '{}'; choose another output", config.out, config.data.resolved_path);
  }
  if (same_file(config.out, options.config)) {
    fail("sweep: the output '{}' is the config itself; choose another output", config.out);
  }
  const std::filesystem::path folder = std::filesystem::path(config.out).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder)) {
    fail("sweep: the output folder '{}' does not exist (output '{}')", folder.string(), config.out);
  }
  // Opening the output now proves the folder writable before any compute.
  AtomicFileWriter writer(config.out);

  const SweepPlan plan = plan_sweep(std::move(config), PlanOptions{options.threads});
  std::vector<std::string> said;
  for (const std::string& warning : plan.warnings) {
    if (std::find(said.begin(), said.end(), warning) != said.end()) continue;
    said.push_back(warning);
    log::warn("{}", warning);
  }
  const std::string data_path = plan.config.data.resolved_path;
  auto digest = std::async(std::launch::async, [data_path] { return data_path.empty() ? "" : file_sha256(data_path); });

  ProgressLine progress(fmt::format("sweep {}", plan.config.name), !options.quiet);
  SweepOptions sweep_options;
  sweep_options.threads = options.threads;
  sweep_options.on_progress = [&](std::size_t done, std::size_t total, int layer) {
    progress.update(done, total, layer >= 0 ? fmt::format("layer {}", layer) : std::string("synthetic needle"));
  };
  sweep_options.on_model_progress = [&](int pass, int passes, int chunk, int chunks) {
    progress.update(static_cast<std::size_t>(pass) * chunks + chunk, static_cast<std::size_t>(passes) * chunks,
                    pass == 0 ? fmt::format("model base, chunk {}/{}", chunk, chunks)
                              : fmt::format("model pass {}/{}, chunk {}/{}", pass, passes - 1, chunk, chunks));
  };
  if (!options.quiet) {
    if (plan.dump) {
      log::info("sweep '{}': {} runs x {} seeds over {} layers of '{}'", plan.config.name, plan.runs.size(),
                plan.config.seeds.size(), plan.dump->layers().size(),
                plan.generated_data ? "the model's own Q/K/V" : plan.config.data.path);
    }
    if (plan.model) {
      log::info("sweep '{}': {} runs x {} seeds end to end through '{}' ({} chunks of {} tokens)", plan.config.name,
                plan.runs.size(), plan.config.seeds.size(), plan.config.model->path, plan.model->chunks,
                plan.model->options.ctx);
    }
  }
  const SweepResults results = run_sweep(plan, sweep_options);
  progress.finish();
  if (results.needle_trials_measured < results.needle_trials) {
    log::warn("needle: {} of {} planted-needle trials were not measured (a slab that lost tokens, a zero query, or "
              "a query so short that its needle would be over {}x the longest key; 'needle.unmeasured_trials')",
              results.needle_trials - results.needle_trials_measured, results.needle_trials, kMaxPlantedKeyNormRatio);
  }

  DataIdentity identity;
  if (!data_path.empty()) identity.bytes = std::filesystem::file_size(data_path);
  identity.sha256 = digest.get();
  writer.write(sweep_results_json(plan, results, identity).dump(1) + "\n");
  writer.commit();
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
          "Reconstruction, attention and needle metrics in one tqlab.sweep/1 document, alike for any --threads.",
          "tqlab-sweep"));
  command->add_option("--config", options->config, "Sweep config (JSON)")->required();
  command->add_option("--out", options->out, "Results file (overrides the config's \"out\")");
  command->add_option("--data", options->data, "Tensor file to sweep (overrides data.path)");
  command->add_option("--threads", options->threads, "Worker threads (0: every core this process may use)")
      ->capture_default_str();
  command->add_option("--seeds", options->seeds, "Seeds, e.g. 0,1,2 (overrides the config's seeds)");
  command->add_option("--seed", options->seeds, "One seed (overrides the config's seeds)");
  command->add_option("--layers", options->layers, "Layers: all, or e.g. 0,2,5-7 (overrides data.layers)");
  command->add_flag("--quiet", options->quiet, "No progress line and no informational messages");
  command->callback([options, &exit_code] { exit_code = run_sweep_command(*options); });
}

}  // namespace tqlab::cli
