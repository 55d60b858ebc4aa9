// tqlab allocate --config C --budget BITS: where the bits go (src/allocate/). Profiles every
// candidate on every unit (layer or layer x kv head, keys and values) with only that unit
// quantized, caches the profile by content, solves the multiple-choice knapsack exactly at the
// budget, predicts the uniform specs and the boundary rule the same way, and with --verify measures
// them by the ordinary sweep. Writes one tqlab.allocation/1 document and prints a table.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include "allocate/allocate_job.h"
#include "allocate/allocation_document.h"
#include "allocate/candidates.h"
#include "allocate/engine_shapes.h"
#include "allocate/offline_profile.h"
#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/engine.h"
#include "job/sweep_shard.h"
#include "sweep/sweep_model.h"

namespace tqlab::cli {
namespace {

struct AllocateCommandOptions {
  std::string config;
  std::string data;
  std::string budget;
  std::string granularity = "layer-head";
  std::string candidates;
  std::string profile;
  std::string key_metric = "out_err";
  double key_weight = 1.0;
  bool calibrate = false;
  bool verify = false;
  std::string output;
  std::string cache_dir;
  bool no_cache = false;
  bool no_prefix_reuse = false;
  std::string seeds;
  std::string shard;
  std::string profile_file;
  std::string engine;
  std::string engine_config;
  int threads = 0;
  bool quiet = false;
};

// --shard K/N, refused beside what solves a whole profile; without it a budget is needed.
std::optional<ShardSpec> parse_shard_option(const AllocateCommandOptions& options) {
  if (options.shard.empty()) {
    if (options.budget.empty()) {
      fail(
          "allocate: no budget: pass --budget BITS (or a candidate spec), or --shard K/N to measure part of a profile");
    }
    return std::nullopt;
  }
  const ShardSpec shard = parse_shard_spec(options.shard);
  for (const auto& [given, name] :
       {std::pair{options.verify, "--verify"}, std::pair{options.calibrate, "--calibrate"},
        std::pair{!options.profile_file.empty(), "--profile-file"}, std::pair{!options.budget.empty(), "--budget"}}) {
    if (given) {
      fail(
          "allocate: --shard {} measures part of a profile, which {} cannot take; tqlab merge joins the shards, "
          "then allocate --profile-file solves",
          shard.text(), name);
    }
  }
  return shard;
}

// The config with --data and --seeds applied.
SweepConfig load_allocate_config(const AllocateCommandOptions& options) {
  SweepConfig config = load_sweep_config(options.config, false);
  if (!options.data.empty()) {  // the user's path, relative to where they stand
    config.data.path = options.data;
    config.data.resolved_path = options.data;
  }
  if (!options.seeds.empty()) config.seeds = parse_seed_list(options.seeds, "allocate");
  return config;
}

// --profile, or the config's kind (model with a model block), checked against the config and --calibrate.
ProfileKind parse_profile_option(const AllocateCommandOptions& options, const SweepConfig& config) {
  ProfileKind kind = config.model ? ProfileKind::model : ProfileKind::offline;
  if (!options.profile.empty()) {
    const std::optional<ProfileKind> parsed = parse_profile_kind(options.profile);
    if (!parsed) fail("allocate: --profile '{}' is not offline or model", options.profile);
    kind = *parsed;
  }
  if (kind == ProfileKind::model && !config.model) {
    fail("allocate: --profile model needs a \"model\" block in the config '{}'", options.config);
  }
  if (options.calibrate && kind != ProfileKind::offline) {
    fail("allocate: --calibrate fits the offline profile's key weight: use it with --profile offline");
  }
  return kind;
}

// A budget given as a spec names the candidate it is canonically ("tq:b=3,nc" at dim 64); a number,
// or what is neither (resolve_budget says what a budget is), stays as given.
std::string canonical_budget(const std::string& budget, const std::vector<int>& dims) {
  double number = 0;
  const char* end = budget.data() + budget.size();
  if (std::from_chars(budget.data(), end, number).ptr == end) return budget;
  try {
    return canonical_candidates({budget}, dims, "--budget").front();
  } catch (const InputError&) {
    return budget;
  }
}

// --engine: the engine's canonical spelling, the cache types it chooses from (its names) and their
// tqlab specs as candidates; checked against what the engine runs and what the config holds.
void apply_engine_option(const AllocateCommandOptions& options, const SweepConfig& config, AllocateJobRequest& request,
                         std::vector<std::string>& specs) {
  if (options.engine.empty() || is_default_engine(options.engine)) return;
  request.engine = canonical_allocation_engine(options.engine, "--engine");
  const std::unique_ptr<Engine> engine = parse_engine(engine_of_types(request.engine), "--engine");
  if (request.shard) fail("allocate: --engine solves a whole profile; measure shards without it");
  if (!config.model) {
    fail("allocate: --engine {} measures its plans end to end: the config '{}' needs a \"model\" block", request.engine,
         options.config);
  }
  request.engine_types = options.candidates.empty() ? default_engine_types(request.engine)
                                                    : split_candidate_list(options.candidates, "--candidates");
  check_engine_types(request.engine, request.engine_types, "--candidates");
  const std::vector<std::string> types = engine->cache_types();
  specs.clear();
  for (const std::string& type : request.engine_types) {
    if (!types.empty() && std::find(types.begin(), types.end(), type) == types.end()) {
      fail("allocate: --candidates '{}' with --engine {}: its cache types are {}", type, request.engine,
           fmt::join(types, ", "));
    }
    specs.push_back(engine->quantizer_spec(type));
  }
}

// --engine-config FILE: only beside an engine whose plans can be a layer map (vllm, modelopt).
void check_engine_config_option(const AllocateCommandOptions& options, const AllocateJobRequest& request) {
  if (options.engine_config.empty()) return;
  if (request.engine != "vllm" && request.engine != "modelopt") {
    fail("allocate: --engine-config writes a layer map's {}: it needs --engine vllm or --engine modelopt{}",
         kModeloptConfigFile, request.engine.empty() ? "" : fmt::format(", not {}", request.engine));
  }
}

// --engine-config: refused (before anything is written) when the best plan has no loader file.
void check_engine_loader_file(const AllocateCommandOptions& options, const AllocationReport& report) {
  if (options.engine_config.empty() || !engine_loader_file(*report.engine).empty()) return;
  const std::string best = report.engine->best ? report.engine->plans[*report.engine->best].scored.name
                                               : std::string("no plan fits the budget");
  fail("allocate: --engine-config '{}': the best plan of --engine {} has no {} to write ({})", options.engine_config,
       report.engine->engine, kModeloptConfigFile, best);
}

int run_allocate_command(const AllocateCommandOptions& options) {
  AllocateJobRequest request;
  const std::optional<Granularity> granularity = parse_granularity(options.granularity);
  if (!granularity) fail("allocate: --granularity '{}' is not layer or layer-head", options.granularity);
  const std::optional<KeyMetric> key_metric = parse_key_metric(options.key_metric);
  if (!key_metric) fail("allocate: --key-metric '{}' is not out_err or kl", options.key_metric);
  if (!(options.key_weight > 0)) fail("allocate: --key-weight {} must be positive", options.key_weight);
  if (options.output.empty()) fail("allocate: no output file: pass -o ALLOC.json");
  if (!options.cache_dir.empty() && !std::filesystem::is_directory(options.cache_dir)) {
    fail("allocate: --cache-dir '{}' is not a folder", options.cache_dir);
  }
  request.shard = parse_shard_option(options);
  const SweepConfig config = load_allocate_config(options);
  request.kind = parse_profile_option(options, config);
  std::vector<std::string> specs =
      options.candidates.empty() ? default_candidates() : split_candidate_list(options.candidates, "--candidates");
  apply_engine_option(options, config, request, specs);
  check_engine_config_option(options, request);
  std::vector<CommandInput> inputs = config_inputs(config);
  inputs.push_back({options.config, "the config"});
  inputs.push_back({options.profile_file, "the --profile-file"});
  guard_output("allocate", "-o", options.output, inputs);
  std::optional<AtomicFileWriter> engine_writer;
  if (!options.engine_config.empty()) {
    if (same_file_path(options.engine_config, options.output)) {
      fail("allocate: --engine-config '{}' is the -o file", options.engine_config);
    }
    guard_output("allocate", "--engine-config", options.engine_config, inputs);
    engine_writer.emplace(options.engine_config);
  }
  AtomicFileWriter writer(options.output);

  std::unique_ptr<SweepModel> model;
  if (config.model) model = open_sweep_model(config);
  std::vector<int> dims;
  if (model) dims.push_back(model->transformer->config().head_dim);
  if (request.kind == ProfileKind::offline && !config.data.resolved_path.empty()) dims = data_head_dims(config);
  request.candidates = canonical_candidates(specs, dims, "--candidates");
  request.config_path = options.config;
  request.granularity = *granularity;
  request.objective = {*key_metric, options.key_weight};
  request.budget =
      canonical_budget(request.engine.empty()
                           ? options.budget
                           : parse_engine(engine_of_types(request.engine), "--engine")->quantizer_spec(options.budget),
                       dims);
  request.calibrate = options.calibrate;
  request.verify = options.verify;
  request.profile_file = options.profile_file;
  const std::string folder = std::filesystem::path(options.output).parent_path().string();
  request.use_cache = !options.no_cache;
  request.cache_folder = options.cache_dir.empty() ? folder : options.cache_dir;
  request.reuse_prefix = !options.no_prefix_reuse;
  request.threads = options.threads;
  std::unique_ptr<ProgressLine> progress;
  request.on_step = [&](const std::string& step) {
    if (progress) progress->finish();
    progress = step.empty() ? nullptr : std::make_unique<ProgressLine>("allocate: " + step, !options.quiet);
  };
  request.on_progress = [&](std::size_t done, std::size_t total) {
    if (progress) progress->update(done, total, "");
  };
  request.on_note = [&](const std::string& note) {
    if (!options.quiet) log::info("{}", note);
  };
  request.on_solved = [&](const AllocationReport& report) { check_engine_loader_file(options, report); };
  const AllocateJobOutcome outcome = run_allocate_job(config, model.get(), request, writer);
  if (engine_writer) {
    engine_writer->write(engine_loader_config(*outcome.report->engine).dump(2) + "\n");
    engine_writer->commit();
  }
  if (outcome.report) fmt::print("{}", allocation_table(*outcome.report));
  if (!options.quiet) log::info("wrote {}", options.output);
  if (engine_writer && !options.quiet) log::info("wrote {}", options.engine_config);
  return kExitOk;
}

}  // namespace

void setup_allocate(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AllocateCommandOptions>();
  auto* command = app.add_subcommand(
      "allocate",
      command_description("Where the KV bits go: per layer, kv head and K vs V under a budget",
                          "Measured sensitivity, an exact knapsack, uniform and boundary rules predicted alike.",
                          "tqlab-allocate"));
  command->add_option("--config", options->config, "Sweep config (JSON): its data or model block, seeds, metrics")
      ->required();
  command->add_option("--data", options->data, "Tensor file to profile (overrides data.path)");
  command->add_option("--budget", options->budget, "Mean bits per value (e.g. 3.25), or a candidate's uniform bits");
  command->add_option("--granularity", options->granularity, "Units: layer, or layer-head")->capture_default_str();
  command->add_option("--candidates", options->candidates, "Specs to choose from (default: tq:b=2..8,nc and fp16)");
  command->add_option("--profile", options->profile, "offline or model (default: model with a model block)");
  command->add_option("--key-metric", options->key_metric, "Offline damage of keys: out_err or kl")
      ->capture_default_str();
  command->add_option("--key-weight", options->key_weight, "Offline: the keys' damage weight")->capture_default_str();
  command->add_flag("--calibrate", options->calibrate, "Offline: fit the key weight to the model profile and report");
  command->add_flag("--verify", options->verify, "Measure the allocation, uniform and boundary by the sweep");
  add_output_option(*command, options->output, "Allocation document (tqlab.allocation/1 JSON)")->required();
  command->add_option("--cache-dir", options->cache_dir, "Folder of cached profiles (default: the output's)");
  command->add_flag("--no-cache", options->no_cache, "Measure the profile again; read and write no cache");
  command->add_flag("--no-prefix-reuse", options->no_prefix_reuse,
                    "Model profile: run every pass from layer 0 (same numbers, slower)");
  command->add_option("--shard", options->shard, "Measure profile shard K of N only (K/N) and write it; see merge");
  command->add_option("--profile-file", options->profile_file, "The profile to solve (tqlab merge of its shards)");
  command->add_option(
      "--engine", options->engine,
      "Also solve over what ENGINE can run (llama.cpp, ik_llama.cpp, vllm, trtllm, modelopt) and print its flags");
  command->add_option("--engine-config", options->engine_config,
                      "With --engine vllm or modelopt: write the best layer map's hf_quant_config.json here");
  add_seeds_options(*command, options->seeds, "default: the config's seeds");
  add_threads_option(*command, options->threads);
  add_quiet_flag(*command, options->quiet);
  command->callback([options, &exit_code] { exit_code = run_allocate_command(*options); });
}

}  // namespace tqlab::cli
