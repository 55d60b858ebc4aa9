// tqlab allocate --config C --budget BITS: where the bits go (src/allocate/). Profiles every
// candidate on every unit (layer or layer x kv head, keys and values) with only that unit
// quantized, caches the profile by content, solves the multiple-choice knapsack exactly at the
// budget, predicts the uniform specs and the boundary rule the same way, and with --verify measures
// them by the ordinary sweep. Writes one tqlab.allocation/1 document and prints a table.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "allocate/agreement.h"
#include "allocate/allocation.h"
#include "allocate/allocation_document.h"
#include "allocate/candidates.h"
#include "allocate/model_profile.h"
#include "allocate/offline_profile.h"
#include "allocate/profile_cache.h"
#include "allocate/profile_json.h"
#include "allocate/profile_shard.h"
#include "allocate/profile_work.h"
#include "allocate/verify.h"
#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "job/sweep_shard.h"
#include "model/model_config.h"
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
  int threads = 0;
  bool quiet = false;
};

// What a profile measurement needs, opened once.
struct ProfileContext {
  const AllocateCommandOptions& options;
  const SweepConfig& config;
  const SweepModel* model;
  std::vector<std::string> candidates;
  std::string cache_folder;
  ProfileKind profile_file_kind;  ///< the kind --profile-file stands for (the command's profile)
};

struct MeasuredProfile {
  Profile profile;
  std::string cache_path;
  bool cache_hit = false;
};

// The granularity a profile of `kind` is measured at: an offline one per head (summed per layer after).
Granularity measured_granularity(ProfileKind kind, Granularity granularity) {
  return kind == ProfileKind::offline ? Granularity::layer_head : granularity;
}

// Measures the profile of `kind`, or with `held` only those of its work units (allocate/profile_work.h),
// its content key and source set.
Profile measure_profile(const ProfileContext& context, ProfileKind kind, Granularity granularity,
                        const std::optional<std::vector<int>>& held) {
  const Granularity measured_at = measured_granularity(kind, granularity);
  const nlohmann::ordered_json source =
      profile_source(context.config, context.model, kind, measured_at, context.candidates);
  ProgressLine progress(fmt::format("allocate: {} profile", profile_kind_name(kind)), !context.options.quiet);
  const auto on_progress = [&](std::size_t done, std::size_t total) { progress.update(done, total, ""); };
  Profile profile;
  if (kind == ProfileKind::model) {
    ModelProfileOptions model_options;
    model_options.candidates = context.candidates;
    model_options.granularity = measured_at;
    model_options.threads = context.options.threads;
    model_options.reuse_prefix = !context.options.no_prefix_reuse;
    model_options.passes = held;
    model_options.on_progress = on_progress;
    profile = measure_model_profile(context.config, *context.model, model_options);
  } else {
    OfflineProfileOptions offline_options;
    offline_options.candidates = context.candidates;
    offline_options.threads = context.options.threads;
    offline_options.runs = held;
    offline_options.on_progress = on_progress;
    profile = measure_offline_profile(context.config, offline_options);
  }
  progress.finish();
  profile.content_key = profile_content_key(source);
  profile.source = source.dump();
  if (!context.options.quiet) {
    log::info("allocate: {} profile measured in {:.1f} s{}", profile_kind_name(kind), profile.seconds,
              profile.layers_computed_share
                  ? fmt::format(" (its passes computed {:.1f}% of the layers a pass from layer 0 would)",
                                100 * *profile.layers_computed_share)
                  : std::string());
  }
  return profile;
}

// What the profile of `kind` measured at `granularity` holds, without its numbers: its kind,
// granularity, candidates, seeds and units (from the model's config, or the data's headers).
Profile profile_skeleton(const ProfileContext& context, ProfileKind kind, Granularity granularity) {
  Profile skeleton;
  skeleton.kind = kind;
  skeleton.granularity = granularity;
  skeleton.candidates = context.candidates;
  skeleton.seeds = context.config.seeds;
  std::vector<LayerHeads> layers;
  if (kind == ProfileKind::offline && !context.config.data.resolved_path.empty()) {
    layers = data_layer_heads(context.config);
  } else {
    // The model's layers; an offline profile of its own dump holds the data's selection of them.
    const ModelConfig& shape = context.model->transformer->config();
    const std::optional<std::vector<int>>& selected = context.config.data.kv.layers;
    for (int layer = 0; layer < shape.layers; ++layer) {
      if (kind == ProfileKind::model || !selected || std::count(selected->begin(), selected->end(), layer) > 0) {
        layers.push_back({layer, shape.kv_heads});
      }
    }
  }
  for (const LayerHeads& layer : layers) skeleton.layers.push_back(layer.layer);
  for (const AllocationUnit& unit : allocation_units(layers, granularity)) skeleton.units.push_back({unit, 0, {}});
  return skeleton;
}

// The profile of `kind` at `granularity`: from --profile-file, or the cache when it holds it, else
// measured and cached. Either file is checked against the profile this command would measure.
MeasuredProfile measured_profile(const ProfileContext& context, ProfileKind kind, Granularity granularity) {
  const std::string key = profile_content_key(
      profile_source(context.config, context.model, kind, measured_granularity(kind, granularity), context.candidates));
  const Profile expected = profile_skeleton(context, kind, measured_granularity(kind, granularity));
  MeasuredProfile out;
  std::optional<Profile> cached;
  if (!context.options.profile_file.empty() && kind == context.profile_file_kind) {
    cached = read_profile_document(context.options.profile_file, nullptr);
    if (cached->content_key != key) {
      fail(
          "allocate: --profile-file '{}' holds the {} profile of content key {}…, but this config's {} profile with "
          "these candidates, seeds and granularity has content key {}… (its \"source\" says what it was "
          "measured from)",
          context.options.profile_file, profile_kind_name(cached->kind), cached->content_key.substr(0, 16),
          profile_kind_name(kind), key.substr(0, 16));
    }
    check_profile_fits(*cached, expected, context.options.profile_file);
    out.cache_path = context.options.profile_file;
  } else if (!context.options.no_cache) {
    out.cache_path = profile_cache_path(context.cache_folder, kind, key);
    std::string warning;
    cached = read_cached_profile(out.cache_path, key, expected, warning);
    if (!warning.empty()) log::warn("{}", warning);
  }
  if (cached) {
    out.profile = std::move(*cached);
    out.cache_hit = true;
    if (!context.options.quiet) {
      log::info("allocate: {} profile from '{}'", profile_kind_name(kind), out.cache_path);
    }
  } else {
    out.profile = measure_profile(context, kind, granularity, std::nullopt);
    if (!out.cache_path.empty()) write_cached_profile(out.cache_path, out.profile);
  }
  if (kind == ProfileKind::offline && granularity == Granularity::layer) out.profile = profile_by_layer(out.profile);
  return out;
}

// --shard K/N: the work units of the profile's cut that shard K holds, measured and written as a
// tqlab.profile-shard/1 document for tqlab merge.
void write_profile_shard(const ProfileContext& context, ProfileKind kind, Granularity granularity,
                         const ShardSpec& spec, AtomicFileWriter& writer) {
  const Profile skeleton = profile_skeleton(context, kind, measured_granularity(kind, granularity));
  ProfileShard shard;
  shard.shard = spec;
  if (kind == ProfileKind::model) {
    shard.costs = model_work_costs(skeleton, context.model->transformer->config(), context.model->options.ctx,
                                   context.model->chunks);
  } else {
    shard.costs = offline_work_costs(skeleton);
  }
  shard.held = profile_shard_units(shard.costs, spec);
  if (!context.options.quiet) {
    log::info("allocate: shard {} holds {} of the {} profile's {} work units{}", spec.text(), shard.held.size(),
              profile_kind_name(kind), shard.costs.size(),
              shard.held.empty() ? std::string()
                                 : fmt::format(": {} to {}", describe_profile_work(skeleton, shard.held.front()),
                                               describe_profile_work(skeleton, shard.held.back())));
  }
  shard.profile = measure_profile(context, kind, granularity, shard.held);
  if (kind == ProfileKind::model && shard.profile.layers_computed_share) {
    shard.layers_computed = static_cast<std::uint64_t>(std::llround(
        *shard.profile.layers_computed_share * static_cast<double>(shard.held.size() * shard.profile.layers.size())));
  }
  writer.write(profile_shard_json(shard).dump(1) + "\n");
  writer.commit();
}

// --calibrate: the key weight fitted to the model profile, and how the offline allocations (at the
// given and the fitted weight) fare by the model profile's measure.
CalibrationReport calibrate(const ProfileContext& context, const Profile& offline, const Granularity granularity,
                            const Objective& objective, const std::string& budget_text) {
  if (context.model == nullptr) {
    fail("allocate: --calibrate fits the offline profile to a model: the config has no model block");
  }
  const Profile model = measured_profile(context, ProfileKind::model, granularity).profile;
  CalibrationReport report;
  report.key_metric = objective.key_metric;
  report.fit = calibrate_key_weight(offline, model, objective.key_metric);
  const Objective model_objective;
  const Budget model_budget = resolve_budget(model, budget_text, "--budget");
  const std::vector<int> reference = allocate_bits(model, model_objective, model_budget).allocation.choice;
  for (double weight : {objective.key_weight, report.fit.key_weight}) {
    const Objective weighted{objective.key_metric, weight};
    const std::vector<int> choice =
        allocate_bits(offline, weighted, resolve_budget(offline, budget_text, "--budget")).allocation.choice;
    report.agreement.push_back(agreement_with(fmt::format("offline, key weight {:.4g}", weight), weight, choice, model,
                                              model_objective, reference));
  }
  return report;
}

int run_allocate_command(const AllocateCommandOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::optional<Granularity> granularity = parse_granularity(options.granularity);
  if (!granularity) fail("allocate: --granularity '{}' is not layer or layer-head", options.granularity);
  const std::optional<KeyMetric> key_metric = parse_key_metric(options.key_metric);
  if (!key_metric) fail("allocate: --key-metric '{}' is not out_err or kl", options.key_metric);
  if (!(options.key_weight > 0)) fail("allocate: --key-weight {} must be positive", options.key_weight);
  if (options.output.empty()) fail("allocate: no output file: pass -o ALLOC.json");
  std::optional<ShardSpec> shard;
  if (!options.shard.empty()) {
    shard = parse_shard_spec(options.shard);
    for (const auto& [given, name] :
         {std::pair{options.verify, "--verify"}, std::pair{options.calibrate, "--calibrate"},
          std::pair{!options.profile_file.empty(), "--profile-file"}, std::pair{!options.budget.empty(), "--budget"}}) {
      if (given) {
        fail(
            "allocate: --shard {} measures part of a profile, which {} cannot take; tqlab merge joins the shards, "
            "then allocate --profile-file solves",
            shard->text(), name);
      }
    }
  } else if (options.budget.empty()) {
    fail("allocate: no budget: pass --budget BITS (or a candidate spec), or --shard K/N to measure part of a profile");
  }
  const std::filesystem::path folder = std::filesystem::path(options.output).parent_path();

  SweepConfig config = load_sweep_config(options.config, false);
  if (!options.data.empty()) {  // the user's path, relative to where they stand
    config.data.path = options.data;
    config.data.resolved_path = options.data;
  }
  if (!options.seeds.empty()) config.seeds = parse_seed_list(options.seeds, "allocate");
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
  std::vector<CommandInput> inputs = config_inputs(config);
  inputs.push_back({options.config, "the config"});
  inputs.push_back({options.profile_file, "the --profile-file"});
  guard_output("allocate", "-o", options.output, inputs);
  AtomicFileWriter writer(options.output);

  std::unique_ptr<SweepModel> model;
  if (config.model) model = open_sweep_model(config);
  std::vector<int> dims;
  if (model) dims.push_back(model->transformer->config().head_dim);
  if (kind == ProfileKind::offline && !config.data.resolved_path.empty()) dims = data_head_dims(config);
  const std::vector<std::string> candidates = canonical_candidates(
      options.candidates.empty() ? default_candidates() : split_candidate_list(options.candidates, "--candidates"),
      dims, "--candidates");
  // A budget given as a spec names the candidate it is canonically ("tq:b=3,nc" at dim 64).
  std::string budget_text = options.budget;
  double number = 0;
  const char* end = budget_text.data() + budget_text.size();
  if (const auto parsed = std::from_chars(budget_text.data(), end, number); parsed.ptr != end) {
    try {
      budget_text = canonical_candidates({budget_text}, dims, "--budget").front();
    } catch (const InputError&) {
      // Not a spec either: resolve_budget says what a budget is.
    }
  }
  const ProfileContext context{
      options, config, model.get(), candidates, options.cache_dir.empty() ? folder.string() : options.cache_dir, kind};
  if (!options.cache_dir.empty() && !std::filesystem::is_directory(options.cache_dir)) {
    fail("allocate: --cache-dir '{}' is not a folder", options.cache_dir);
  }

  if (shard) {
    write_profile_shard(context, kind, *granularity, *shard, writer);
    if (!options.quiet) log::info("wrote {}", options.output);
    return kExitOk;
  }

  AllocationReport report;
  report.config_path = options.config;
  MeasuredProfile measured = measured_profile(context, kind, *granularity);
  report.profile = std::move(measured.profile);
  report.cache_path = measured.cache_path;
  report.cache_hit = measured.cache_hit;
  report.profile_seconds = report.profile.seconds;
  const Objective objective{*key_metric, options.key_weight};
  if (options.calibrate) {
    report.calibration = calibrate(context, report.profile, *granularity, objective, budget_text);
  }
  const Budget budget = resolve_budget(report.profile, budget_text, "--budget");
  report.result = allocate_bits(report.profile, objective, budget);
  if (options.verify) {
    ProgressLine progress("allocate --verify", !options.quiet);
    report.verification =
        verify_choices(config, report.profile, verified_choices(report.result), options.threads,
                       [&](std::size_t done, std::size_t total) { progress.update(done, total, ""); });
    progress.finish();
  }
  report.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  writer.write(allocation_json(report).dump(1) + "\n");
  writer.commit();
  fmt::print("{}", allocation_table(report));
  if (!options.quiet) log::info("wrote {}", options.output);
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
  add_seeds_options(*command, options->seeds, "default: the config's seeds");
  add_threads_option(*command, options->threads);
  add_quiet_flag(*command, options->quiet);
  command->callback([options, &exit_code] { exit_code = run_allocate_command(*options); });
}

}  // namespace tqlab::cli
