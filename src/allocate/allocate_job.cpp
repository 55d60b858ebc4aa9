#include "allocate/allocate_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "allocate/agreement.h"
#include "allocate/allocation.h"
#include "allocate/engine_shapes.h"
#include "allocate/measured_pick.h"
#include "allocate/model_profile.h"
#include "allocate/offline_profile.h"
#include "allocate/profile_cache.h"
#include "allocate/profile_json.h"
#include "allocate/profile_shard.h"
#include "allocate/profile_work.h"
#include "allocate/same_bits.h"
#include "allocate/verify.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/engine.h"
#include "model/model_config.h"

namespace tqlab {
namespace {

// The job's inputs, opened once.
struct AllocateContext {
  const SweepConfig& config;
  const SweepModel* model;
  const AllocateJobRequest& request;

  void note(const std::string& text) const {
    if (request.on_note) request.on_note(text);
  }
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

// Whose numerics the profile of `kind` is measured in (Profile::numerics): a model profile for an engine
// whose attention tqlab has (llama.cpp, llama.cpp:rot=off) in the engine's, so that its plans are scored
// as the engine computes them; an offline profile, and every other engine's (ik_llama.cpp, vllm, trtllm:
// tqlab has not their numerics), in tqlab's.
std::string profile_numerics(const AllocateJobRequest& request, ProfileKind kind) {
  if (kind != ProfileKind::model || request.engine.empty()) return "tqlab";
  const std::string engine = engine_of_types(request.engine);
  return engine == request.engine && !is_default_engine(engine) ? engine : "tqlab";
}

// Announces a long step to the caller and ends it when it goes out of scope.
class Step {
 public:
  Step(const AllocateJobRequest& request, const std::string& name) : request_(request) {
    if (request_.on_step) request_.on_step(name);
  }
  ~Step() {
    if (request_.on_step) request_.on_step("");
  }
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;
  std::function<void(std::size_t, std::size_t)> progress() const {
    return [this](std::size_t done, std::size_t total) {
      if (request_.on_progress) request_.on_progress(done, total);
    };
  }

 private:
  const AllocateJobRequest& request_;
};

// Measures the profile of `kind`, or with `held` only those of its work units (allocate/profile_work.h),
// its content key and source set.
Profile measure_profile(const AllocateContext& context, ProfileKind kind, Granularity granularity,
                        const std::optional<std::vector<int>>& held) {
  const AllocateJobRequest& request = context.request;
  const Granularity measured_at = measured_granularity(kind, granularity);
  const std::string numerics = profile_numerics(request, kind);
  const nlohmann::ordered_json source =
      profile_source(context.config, context.model, kind, measured_at, request.candidates, numerics);
  Profile profile;
  {
    const Step step(request, fmt::format("{} profile", profile_kind_name(kind)));
    if (kind == ProfileKind::model) {
      ModelProfileOptions model_options;
      model_options.candidates = request.candidates;
      model_options.numerics = numerics;
      model_options.granularity = measured_at;
      model_options.threads = request.threads;
      model_options.reuse_prefix = request.reuse_prefix;
      model_options.passes = held;
      model_options.on_progress = step.progress();
      profile = measure_model_profile(context.config, *context.model, model_options);
    } else {
      OfflineProfileOptions offline_options;
      offline_options.candidates = request.candidates;
      offline_options.threads = request.threads;
      offline_options.runs = held;
      offline_options.on_progress = step.progress();
      profile = measure_offline_profile(context.config, offline_options);
    }
  }
  profile.content_key = profile_content_key(source);
  profile.source = source.dump();
  context.note(fmt::format("allocate: {} profile{} measured in {:.1f} s{}", profile_kind_name(kind),
                           is_default_engine(numerics) ? std::string() : " in " + numerics + "'s numerics",
                           profile.seconds,
                           profile.layers_computed_share
                               ? fmt::format(" (its passes computed {:.1f}% of the layers a pass from layer 0 would)",
                                             100 * *profile.layers_computed_share)
                               : std::string()));
  return profile;
}

// The model's layers that a profile of `kind` holds, with their kv heads: the data's (from its
// headers) for an offline profile of a data file, else the model's (an offline profile of its own
// dump: the data's selection of them).
std::vector<LayerHeads> profiled_layers(const AllocateContext& context, ProfileKind kind) {
  if (kind == ProfileKind::offline && !context.config.data.resolved_path.empty()) {
    return data_layer_heads(context.config);
  }
  std::vector<LayerHeads> layers;
  const ModelConfig& shape = context.model->transformer->config();
  const std::optional<std::vector<int>>& selected = context.config.data.kv.layers;
  for (int layer = 0; layer < shape.layers; ++layer) {
    if (kind == ProfileKind::model || !selected || std::count(selected->begin(), selected->end(), layer) > 0) {
      layers.push_back({layer, shape.kv_heads});
    }
  }
  return layers;
}

// What the profile of `kind` measured at `granularity` holds, without its numbers: its kind,
// granularity, candidates, seeds and units.
Profile profile_skeleton(const AllocateContext& context, ProfileKind kind, Granularity granularity) {
  Profile skeleton;
  skeleton.kind = kind;
  skeleton.granularity = granularity;
  skeleton.candidates = context.request.candidates;
  skeleton.numerics = profile_numerics(context.request, kind);
  skeleton.seeds = context.config.seeds;
  const std::vector<LayerHeads> layers = profiled_layers(context, kind);
  for (const LayerHeads& layer : layers) skeleton.layers.push_back(layer.layer);
  for (const AllocationUnit& unit : allocation_units(layers, granularity)) skeleton.units.push_back({unit, 0, {}});
  return skeleton;
}

// The profile of `kind` at `granularity`: from --profile-file (for the request's own kind), or the
// cache when it holds it, else measured and cached. Either file is checked against the profile this
// job would measure.
MeasuredProfile measured_profile(const AllocateContext& context, ProfileKind kind, Granularity granularity) {
  const AllocateJobRequest& request = context.request;
  const std::string key =
      profile_content_key(profile_source(context.config, context.model, kind, measured_granularity(kind, granularity),
                                         request.candidates, profile_numerics(request, kind)));
  const Profile expected = profile_skeleton(context, kind, measured_granularity(kind, granularity));
  MeasuredProfile out;
  std::optional<Profile> cached;
  if (!request.profile_file.empty() && kind == request.kind &&
      measured_granularity(kind, granularity) == measured_granularity(request.kind, request.granularity)) {
    cached = read_profile_document(request.profile_file, nullptr);
    if (cached->content_key != key) {
      fail(
          "allocate: --profile-file '{}' holds the {} profile of content key {}…, but this config's {} profile with "
          "these candidates, seeds and granularity has content key {}… (its \"source\" says what it was "
          "measured from)",
          request.profile_file, profile_kind_name(cached->kind), cached->content_key.substr(0, 16),
          profile_kind_name(kind), key.substr(0, 16));
    }
    check_profile_fits(*cached, expected, request.profile_file);
    out.cache_path = request.profile_file;
  } else if (request.use_cache) {
    out.cache_path = profile_cache_path(request.cache_folder, kind, key);
    std::string warning;
    cached = read_cached_profile(out.cache_path, key, expected, warning);
    if (!warning.empty()) log::warn("{}", warning);
  }
  if (cached) {
    out.profile = std::move(*cached);
    out.cache_hit = true;
    context.note(fmt::format("allocate: {} profile from '{}'", profile_kind_name(kind), out.cache_path));
  } else {
    out.profile = measure_profile(context, kind, granularity, std::nullopt);
    if (!out.cache_path.empty()) write_cached_profile(out.cache_path, out.profile);
  }
  if (kind == ProfileKind::offline && granularity == Granularity::layer) out.profile = profile_by_layer(out.profile);
  return out;
}

// A profile shard: the work units of the profile's cut that the shard holds, measured, as a
// tqlab.profile-shard/1 document for tqlab merge.
ProfileShard measure_profile_shard(const AllocateContext& context, const ShardSpec& spec) {
  const AllocateJobRequest& request = context.request;
  const Profile skeleton =
      profile_skeleton(context, request.kind, measured_granularity(request.kind, request.granularity));
  ProfileShard shard;
  shard.shard = spec;
  if (request.kind == ProfileKind::model) {
    shard.costs = model_work_costs(skeleton, context.model->transformer->config(), context.model->options.ctx,
                                   context.model->chunks);
  } else {
    shard.costs = offline_work_costs(skeleton);
  }
  shard.held = profile_shard_units(shard.costs, spec);
  context.note(fmt::format("allocate: shard {} holds {} of the {} profile's {} work units{}", spec.text(),
                           shard.held.size(), profile_kind_name(request.kind), shard.costs.size(),
                           shard.held.empty()
                               ? std::string()
                               : fmt::format(": {} to {}", describe_profile_work(skeleton, shard.held.front()),
                                             describe_profile_work(skeleton, shard.held.back()))));
  shard.profile = measure_profile(context, request.kind, request.granularity, shard.held);
  if (request.kind == ProfileKind::model && shard.profile.layers_computed_share) {
    shard.layers_computed = static_cast<std::uint64_t>(std::llround(
        *shard.profile.layers_computed_share * static_cast<double>(shard.held.size() * shard.profile.layers.size())));
  }
  return shard;
}

// --calibrate: the key weight fitted to the model profile, and how the offline allocations (at the
// given and the fitted weight) fare by the model profile's measure.
CalibrationReport calibrate(const AllocateContext& context, const Profile& offline) {
  const AllocateJobRequest& request = context.request;
  if (context.model == nullptr) {
    fail("allocate: --calibrate fits the offline profile to a model: the config has no model block");
  }
  const Profile model = measured_profile(context, ProfileKind::model, request.granularity).profile;
  CalibrationReport report;
  report.key_metric = request.objective.key_metric;
  report.fit = calibrate_key_weight(offline, model, request.objective.key_metric);
  const Objective model_objective;
  const Budget model_budget = resolve_budget(model, request.budget, "--budget");
  const std::vector<int> reference = allocate_bits(model, model_objective, model_budget).allocation.choice;
  for (double weight : {request.objective.key_weight, report.fit.key_weight}) {
    const Objective weighted{request.objective.key_metric, weight};
    const std::vector<int> choice =
        allocate_bits(offline, weighted, resolve_budget(offline, request.budget, "--budget")).allocation.choice;
    report.agreement.push_back(agreement_with(fmt::format("offline, key weight {:.4g}", weight), weight, choice, model,
                                              model_objective, reference));
  }
  return report;
}

// --engine: the engine's plans and the rows at the same bits (the profile at the other granularity
// measured or read for them), and with --verify the choices it measures for them: every row and the
// plans the engine can run among them (allocate/measured_pick.h).
void solve_for_engine(const AllocateContext& context, const Budget& budget, AllocationReport& report,
                      std::vector<ProfiledChoice>& choices) {
  const AllocateJobRequest& request = context.request;
  report.engine = allocate_for_engine(report.profile, request.objective, budget, request.engine, request.engine_types);
  Profile other = measured_profile(context, request.kind, other_granularity(request.granularity)).profile;
  const std::vector<std::string> type_names = engine_type_names(request.engine, request.engine_types);
  report.same_bits = same_bits_rows(report.profile, std::move(other), report.result, *report.engine, type_names);
  if (request.verify) {
    add_contenders(*report.engine, *report.same_bits, report.profile, request.objective, request.engine_types);
  }
  // Pointers into report.engine->plans are taken only now: add_contenders may append to it.
  for (const std::size_t index : report.engine->contenders) {
    choices.push_back({&report.profile, &report.engine->plans[index].scored});
  }
  for (const SameBitsRow& row : report.same_bits->rows) {
    if (row.fits) choices.push_back({row.on_other ? &report.same_bits->other : &report.profile, &row.scored});
  }
}

// --verify with --engine: the engine's plan chosen by measurement among its contenders, each measured
// under the engine itself when tqlab runs it (allocate/measured_pick.h).
void settle_engine_plan(const AllocateContext& context, AllocationReport& report, const Step& step) {
  EngineAllocation& engine = *report.engine;
  verify_engine_runs(context.config, contender_engine_runs(engine), context.request.threads, step.progress(),
                     *report.verification);
  pick_measured_best(engine, *report.same_bits, report.profile, context.request.objective, *report.verification,
                     measured_damage_metric(report.profile));
  name_engine_run(engine, *report.verification);
  if (engine.profile_best) {
    context.note(fmt::format("allocate: {} measured less damage than the profile's pick {}: the engine runs it",
                             engine.plans[*engine.best].scored.name, engine.plans[*engine.profile_best].scored.name));
  }
}

}  // namespace

AllocateJobOutcome run_allocate_job(const SweepConfig& config, const SweepModel* model,
                                    const AllocateJobRequest& request, AtomicFileWriter& writer) {
  const auto start = std::chrono::steady_clock::now();
  const AllocateContext context{config, model, request};
  AllocateJobOutcome outcome;
  if (request.shard) {
    writer.write(profile_shard_json(measure_profile_shard(context, *request.shard)).dump(1) + "\n");
    writer.commit();
    return outcome;
  }
  AllocationReport& report = outcome.report.emplace();
  report.config_path = request.config_path;
  MeasuredProfile measured = measured_profile(context, request.kind, request.granularity);
  report.profile = std::move(measured.profile);
  report.cache_path = measured.cache_path;
  report.cache_hit = measured.cache_hit;
  report.profile_seconds = report.profile.seconds;
  if (request.calibrate) report.calibration = calibrate(context, report.profile);
  const Budget budget = resolve_budget(report.profile, request.budget, "--budget");
  report.result = allocate_bits(report.profile, request.objective, budget);
  std::vector<ProfiledChoice> choices;
  for (const ScoredChoice* choice : verified_choices(report.result)) choices.push_back({&report.profile, choice});
  if (!request.engine.empty()) solve_for_engine(context, budget, report, choices);
  if (request.verify) {
    const Step step(request, "verify");
    report.verification = verify_choices(config, choices, request.threads, step.progress());
    if (report.engine) settle_engine_plan(context, report, step);
  }
  if (request.on_solved) request.on_solved(report);
  report.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  writer.write(allocation_json(report).dump(1) + "\n");
  writer.commit();
  return outcome;
}

}  // namespace tqlab
