#include "allocate/allocation_document.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "allocate/modelopt_kv_config.h"
#include "allocate/profile_json.h"
#include "core/error.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

Json optional_number(const std::optional<double>& value) { return value ? Json(*value) : Json(); }

Json named_numbers(const std::vector<std::pair<std::string, double>>& values) {
  Json out = Json::object();
  for (const auto& [name, value] : values) out[name] = value;
  return out;
}

// The choice named `name`: the allocation, a uniform spec, the boundary rule, the engine's best plan or a
// row at the same bits.
const ScoredChoice* choice_named(const AllocationReport& report, const std::string& name) {
  const AllocationResult& result = report.result;
  if (result.allocation.name == name) return &result.allocation;
  for (const ScoredChoice& uniform : result.uniform) {
    if (uniform.name == name) return &uniform;
  }
  if (result.boundary && result.boundary->name == name) return &*result.boundary;
  if (report.engine && report.engine->best && report.engine->plans[*report.engine->best].scored.name == name) {
    return &report.engine->plans[*report.engine->best].scored;
  }
  const SameBitsRow* row = report.same_bits ? same_bits_row(*report.same_bits, name) : nullptr;
  return row ? &row->scored : nullptr;
}

std::string damage_description(const Profile& profile, const Objective& objective) {
  if (profile.kind == ProfileKind::model) return "e2e_kld";
  const std::string keys = objective.key_metric == KeyMetric::out_err ? "attn_out_rel_err" : "attn_kl";
  return fmt::format("keys: {} x {}, values: attn_out_rel_err", objective.key_weight, keys);
}

Json choice_json(const Profile& profile, const ScoredChoice& choice, bool with_units) {
  Json out{{"name", choice.name},
           {"bits", choice.bits},
           {"bytes", choice.bytes},
           {"damage", choice.damage},
           {"predicted", named_numbers(choice.predicted)}};
  if (with_units) {
    Json units = Json::array();
    for (std::size_t u = 0; u < profile.units.size(); ++u) {
      const UnitProfile& unit = profile.units[u];
      const auto c = static_cast<std::size_t>(choice.choice[u]);
      units.push_back(
          {{"unit", unit.unit.name()},
           {"spec", profile.candidates[c]},
           {"bits", 8.0 * static_cast<double>(unit.candidates[c].bytes) / static_cast<double>(unit.values)}});
    }
    out["units"] = std::move(units);
  }
  out["run"] = choice_run(profile, choice.choice);
  return out;
}

// The metrics whose measured / predicted ratio says how additive the damage is.
std::vector<std::string> ratio_metrics(const ScoredChoice& choice) {
  std::vector<std::string> names;
  for (const auto& [name, value] : choice.predicted) {
    if (name != "e2e_ln_ppl_ratio") names.push_back(name);
  }
  return names;
}

Json verify_json(const AllocationReport& report) {
  const Verification& verification = *report.verification;
  Json runs = Json::array();
  for (const VerifiedRun& run : verification.runs) {
    Json metrics = Json::object();
    for (const auto& [name, summary] : run.metrics) {
      Json per_seed = Json::array();
      for (const auto& value : summary.per_seed) per_seed.push_back(optional_number(value));
      metrics[name] = {{"mean", optional_number(summary.mean)},
                       {"se", optional_number(summary.standard_error)},
                       {"std", optional_number(summary.seed_std)},
                       {"per_seed", std::move(per_seed)}};
    }
    Json ratio = Json::object();
    if (const ScoredChoice* choice = choice_named(report, run.names.front())) {
      for (const std::string& name : ratio_metrics(*choice)) {
        const std::optional<double> measured = measured_mean(run, name);
        const std::optional<double> predicted = predicted_value(*choice, name);
        ratio[name] = measured && predicted && *predicted != 0 ? Json(*measured / *predicted) : Json();
      }
    }
    runs.push_back({{"names", run.names},
                    {"id", run.id},
                    {"bits", {{"bits_k", run.bits.bits_k}, {"bits_v", run.bits.bits_v}, {"bits_kv", run.bits.bits_kv}}},
                    {"metrics", std::move(metrics)},
                    {"ratio", std::move(ratio)}});
  }
  Json base;
  if (verification.base) {
    base = {{"ppl", verification.base->perplexity.value},
            {"ppl_se", optional_number(verification.base->perplexity.standard_error)}};
  }
  return {{"seeds", verification.seeds}, {"base", std::move(base)}, {"runs", std::move(runs)}};
}

Json calibration_json(const CalibrationReport& calibration) {
  Json agreement = Json::array();
  for (const ProfileAgreement& entry : calibration.agreement) {
    agreement.push_back({{"name", entry.name},
                         {"key_weight", entry.key_weight},
                         {"same_choice_share", entry.same_choice_share},
                         {"mean_abs_bits_difference", entry.mean_abs_bits_difference},
                         {"model_damage", entry.reference_damage},
                         {"model_optimum", entry.reference_optimum}});
  }
  return {{"key_metric", key_metric_name(calibration.key_metric)},
          {"key_weight", calibration.fit.key_weight},
          {"scale", calibration.fit.scale},
          {"pairs", calibration.fit.pairs},
          {"log_rms", calibration.fit.log_rms},
          {"rank_correlation", calibration.fit.rank_correlation},
          {"agreement", std::move(agreement)}};
}

// One role's types: "k" its base type, "k_first"/"k_last" [type, layers] when it has ranges.
void add_role_json(Json& out, const std::string& name, const RoleTypes& role) {
  out[name] = role.base;
  if (role.first_layers > 0) out[name + "_first"] = {role.first, role.first_layers};
  if (role.last_layers > 0) out[name + "_last"] = {role.last, role.last_layers};
}

// A plan's types: a layer map, a dtype per layer, a vLLM preset with its layers, or each role's.
void add_plan_json(Json& out, const EnginePlan& plan) {
  if (plan.layer_map_plan) {  // vLLM's layer map, modelopt: each quantized layer's quant_algo
    Json layers = Json::object();
    for (const LayerAlgo& entry : plan.layer_map) {
      if (!entry.quant_algo.empty()) layers[std::to_string(entry.layer)] = entry.quant_algo;
    }
    out["layer_map"] = std::move(layers);
    return;
  }
  if (!plan.layer_types.empty()) {  // TensorRT-LLM: a dtype per layer, keys and values alike
    out["layer_types"] = plan.layer_types;
    out["dtype"] = plan.layer_ranges;
    return;
  }
  if (!plan.preset.empty()) {
    out["preset"] = plan.preset;
    out["skip_layers"] = plan.skip_layers;
    out["kept_layers"] = plan.kept_layers;
  }
  add_role_json(out, "k", plan.k);
  add_role_json(out, "v", plan.v);
}

// The "engine" section: what the engine can run, its best plan and the flags that run it.
Json engine_json(const EngineAllocation& engine, const Budget& budget) {
  Json plans = Json::array();
  for (const EnginePlan& plan : engine.plans) {
    Json entry = Json::object();
    add_plan_json(entry, plan);
    entry["bits"] = plan.scored.bits;
    entry["damage"] = plan.scored.damage;
    entry["fits"] = plan.scored.bytes <= budget.capacity;
    plans.push_back(std::move(entry));
  }
  Json best;
  if (engine.best) {
    const EnginePlan& plan = engine.plans[*engine.best];
    best = Json{{"name", plan.scored.name}};
    add_plan_json(best, plan);
    best["bits"] = plan.scored.bits;
    best["damage"] = plan.scored.damage;
    Json predicted = Json::object();
    for (const auto& [name, value] : plan.scored.predicted) predicted[name] = value;
    best["predicted"] = std::move(predicted);
  }
  const std::string loader_file = engine_loader_file(engine);
  Json contenders = Json::array();
  for (const std::size_t index : engine.contenders) contenders.push_back(engine.plans[index].scored.name);
  return {{"name", engine.engine},
          {"shape", engine.shape},
          {"invocation", engine.invocation.empty() ? Json(nullptr) : Json(engine.invocation)},
          {"best", std::move(best)},
          {"chosen_by", engine.profile_best ? "measurement" : "profile"},
          {"profile_best", engine.profile_best ? Json(engine.plans[*engine.profile_best].scored.name) : Json(nullptr)},
          {"contenders", std::move(contenders)},
          {"measured_as", engine.runs_itself ? Json(engine_run_name(engine)) : Json(nullptr)},
          {"loader_file", loader_file.empty() ? Json(nullptr) : Json(loader_file)},
          {"loader_config", loader_file.empty() ? Json(nullptr) : engine_loader_config(engine)},
          {"plans", std::move(plans)}};
}

// The "same_bits" section: every row at the budget, and how much less damage each unconstrained
// optimum has than the engine's best plan (predicted; measured in "verify").
Json same_bits_json(const AllocationReport& report) {
  const SameBits& same = *report.same_bits;
  Json rows = Json::array();
  for (const SameBitsRow& row : same.rows) {
    Json entry = choice_json(row.on_other ? same.other : report.profile, row.scored, false);
    entry["label"] = row.label;
    entry["kind"] = row.kind;
    entry["granularity"] = granularity_name(row.on_other ? same.other.granularity : report.profile.granularity);
    entry["fits"] = row.fits;
    rows.push_back(std::move(entry));
  }
  Json saved = Json::object();
  for (const SameBitsRow& row : same.rows) {
    if (row.kind == "optimum") saved[row.scored.name] = optional_number(optimum_damage_saved(same, row));
  }
  Json engine_on_other;
  if (same.engine_on_other) {
    engine_on_other = {{"granularity", granularity_name(same.other.granularity)},
                       {"damage", same.engine_on_other->damage},
                       {"predicted", named_numbers(same.engine_on_other->predicted)}};
  }
  return {{"rows", std::move(rows)},
          {"engine_on_other", std::move(engine_on_other)},
          {"optimum_damage_saved", std::move(saved)}};
}

}  // namespace

nlohmann::ordered_json engine_loader_config(const EngineAllocation& engine) {
  if (engine_loader_file(engine).empty()) throw InternalError("engine_loader_config: no loader file");
  return modelopt_kv_config(engine.plans[*engine.best].layer_map);
}

std::vector<const ScoredChoice*> verified_choices(const AllocationResult& result) {
  std::vector<const ScoredChoice*> choices{&result.allocation};
  if (!result.uniform.empty()) choices.push_back(&result.uniform.back());
  if (result.boundary) choices.push_back(&*result.boundary);
  return choices;
}

nlohmann::ordered_json allocation_json(const AllocationReport& report) {
  const Profile& profile = report.profile;
  const AllocationResult& result = report.result;
  Json out;
  out["schema"] = "tqlab.allocation/1";
  out["tqlab"] = {{"version", TQLAB_VERSION}, {"git_commit", TQLAB_GIT_COMMIT}};
  out["config"] = report.config_path;
  out["budget"] = {{"given", result.budget.given}, {"bits", result.budget.bits}, {"bytes", result.budget.capacity}};
  out["granularity"] = granularity_name(profile.granularity);
  Json objective{{"profile", profile_kind_name(profile.kind)},
                 {"damage", damage_description(profile, result.objective)}};
  if (profile.kind == ProfileKind::offline) {
    objective["key_metric"] = key_metric_name(result.objective.key_metric);
    objective["key_weight"] = result.objective.key_weight;
  }
  out["objective"] = std::move(objective);
  out["solver"] = {{"method", result.solver},
                   {"lower_bound", result.lower_bound},
                   {"gap", result.allocation.damage - result.lower_bound}};
  out["allocation"] = choice_json(profile, result.allocation, true);
  Json compared = Json::array();
  for (const ScoredChoice& uniform : result.uniform) compared.push_back(choice_json(profile, uniform, false));
  if (result.boundary) compared.push_back(choice_json(profile, *result.boundary, false));
  out["compared"] = std::move(compared);
  Json frontier = Json::array();
  for (const FrontierPoint& point : result.frontier) {
    frontier.push_back({{"bits", point.bits}, {"damage", point.damage}, {"lower_bound", point.lower_bound}});
  }
  out["frontier"] = std::move(frontier);
  Json uniform = Json::array();
  for (const ScoredChoice& choice : result.uniform_curve) {
    uniform.push_back({{"spec", profile.candidates[static_cast<std::size_t>(choice.choice.front())]},
                       {"bits", choice.bits},
                       {"damage", choice.damage}});
  }
  out["uniform"] = std::move(uniform);
  if (report.calibration) out["calibration"] = calibration_json(*report.calibration);
  if (report.engine) out["engine"] = engine_json(*report.engine, result.budget);
  if (report.same_bits) out["same_bits"] = same_bits_json(report);
  if (report.verification) out["verify"] = verify_json(report);
  out["profile"] = profile_json(profile, &result.objective);
  out["cache"] = {{"path", report.cache_path}, {"hit", report.cache_hit}};
  out["timing"] = {{"total_seconds", report.total_seconds},
                   {"profile_seconds", report.profile_seconds},
                   {"verify_seconds", report.verification ? report.verification->seconds : 0.0}};
  return out;
}

}  // namespace tqlab
