#include "allocate/allocation_document.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "allocate/profile_json.h"
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

std::optional<double> predicted_value(const ScoredChoice& choice, const std::string& name) {
  for (const auto& [metric, value] : choice.predicted) {
    if (metric == name) return value;
  }
  return std::nullopt;
}

const ScoredChoice* choice_named(const AllocationResult& result, const std::string& name) {
  if (result.allocation.name == name) return &result.allocation;
  for (const ScoredChoice& uniform : result.uniform) {
    if (uniform.name == name) return &uniform;
  }
  if (result.boundary && result.boundary->name == name) return &*result.boundary;
  return nullptr;
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
    if (const ScoredChoice* choice = choice_named(report.result, run.names.front())) {
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

// "0.0123 ± 0.0004" from a verified metric (± the std over seeds when there are several).
std::string measured_cell(const VerifiedRun& run, const std::string& name, const char* format) {
  for (const auto& [metric, summary] : run.metrics) {
    if (metric != name || !summary.mean) continue;
    std::string text = fmt::format(fmt::runtime(format), *summary.mean);
    if (summary.seed_std) {
      std::string spread = fmt::format(fmt::runtime(format), *summary.seed_std);
      if (!spread.empty() && spread.front() == '+') spread.erase(0, 1);  // a signed format: a spread has no sign
      text += " ± " + spread;
    }
    return text;
  }
  return "-";
}

// One role's types: "k" its base type, "k_first"/"k_last" [type, layers] when it has ranges.
void add_role_json(Json& out, const std::string& name, const RoleTypes& role) {
  out[name] = role.base;
  if (role.first_layers > 0) out[name + "_first"] = {role.first, role.first_layers};
  if (role.last_layers > 0) out[name + "_last"] = {role.last, role.last_layers};
}

// A plan's types: a vLLM preset with its layers, or each role's.
void add_plan_json(Json& out, const EnginePlan& plan) {
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
  return {{"name", engine.engine},
          {"shape", engine.shape},
          {"invocation", engine.invocation.empty() ? Json(nullptr) : Json(engine.invocation)},
          {"best", std::move(best)},
          {"measured_as", engine.runs_itself ? Json(engine_run_name(engine)) : Json(nullptr)},
          {"plans", std::move(plans)}};
}

// The engine's lines of the table: its best plan against the allocation, the flags, and with
// --verify the plan measured under the engine itself and under tqlab's semantics.
std::string engine_text(const AllocationReport& report) {
  if (!report.engine) return "";
  const EngineAllocation& engine = *report.engine;
  const ScoredChoice& allocation = report.result.allocation;
  std::string text = fmt::format("\nengine {}: {}\n", engine.engine, engine.shape);
  if (!engine.best) return text + fmt::format("  no plan fits {:.4f} bits per value\n", report.result.budget.bits);
  const EnginePlan& best = engine.plans[*engine.best];
  text += fmt::format(
      "  best within the budget: {:.4f} bits, predicted damage {:.5g} (the allocation: {:.5g} at {:.4f} bits)\n"
      "  run it with: {}\n",
      best.scored.bits, best.scored.damage, allocation.damage, allocation.bits, engine.invocation);
  if (!report.verification) return text;
  for (const std::string& name : std::vector<std::string>{engine_run_name(engine), best.scored.name, allocation.name}) {
    const VerifiedRun* run = verified_run(*report.verification, name);
    if (run == nullptr) continue;
    text += fmt::format("  measured, {}: bits_kv {:.4f}, e2e_kld {}, e2e_ppl_delta_pct {}\n",
                        name == best.scored.name ? name + " (tqlab's semantics)" : name, run->bits.bits_kv,
                        measured_cell(*run, "e2e_kld", "{:.5f}"), measured_cell(*run, "e2e_ppl_delta_pct", "{:+.3f}"));
  }
  return text;
}

}  // namespace

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
  if (report.verification) out["verify"] = verify_json(report);
  out["profile"] = profile_json(profile, &result.objective);
  out["cache"] = {{"path", report.cache_path}, {"hit", report.cache_hit}};
  out["timing"] = {{"total_seconds", report.total_seconds},
                   {"profile_seconds", report.profile_seconds},
                   {"verify_seconds", report.verification ? report.verification->seconds : 0.0}};
  return out;
}

std::string allocation_table(const AllocationReport& report) {
  const Profile& profile = report.profile;
  const AllocationResult& result = report.result;
  std::string text = fmt::format(
      "{} profile, {} units ({}), {} candidates; budget {:.4f} bits per value ({}); solver {}{}\n",
      profile_kind_name(profile.kind), profile.units.size(), granularity_name(profile.granularity),
      profile.candidates.size(), result.budget.bits, result.budget.given, result.solver,
      result.solver == "dp" ? " (exact)" : fmt::format(" (gap {:.3g})", result.allocation.damage - result.lower_bound));

  // The unit map: a row per layer, a column per (role, head).
  std::vector<std::string> columns;
  for (const UnitProfile& unit : profile.units) {
    if (unit.unit.layer != profile.layers.front()) break;
    columns.push_back(unit.unit.head < 0
                          ? (unit.unit.role == Role::key ? "K" : "V")
                          : fmt::format("{}.h{}", unit.unit.role == Role::key ? "K" : "V", unit.unit.head));
  }
  std::vector<std::size_t> order(columns.size());  // keys' columns first, then values'
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return columns[a].front() == 'K' && columns[b].front() == 'V';
  });
  text += "\nbits per value of each unit's spec:\n" + fmt::format("{:<6}", "layer");
  for (std::size_t column : order) text += fmt::format("  {:>6}", columns[column]);
  text += "\n";
  for (std::size_t row = 0; row < profile.layers.size(); ++row) {
    text += fmt::format("{:<6}", profile.layers[row]);
    for (std::size_t column : order) {
      const std::size_t u = row * columns.size() + column;
      const UnitProfile& unit = profile.units[u];
      const std::uint64_t bytes = unit.candidates[static_cast<std::size_t>(result.allocation.choice[u])].bytes;
      text += fmt::format("  {:>6.2f}", 8.0 * static_cast<double>(bytes) / static_cast<double>(unit.values));
    }
    text += "\n";
  }

  // A row per choice: predicted, then (with --verify) measured.
  const bool model = profile.kind == ProfileKind::model;
  const std::vector<std::string> predicted = model ? std::vector<std::string>{"e2e_kld", "e2e_ppl_delta_pct"}
                                                   : std::vector<std::string>{"attn_out_rel_err", "attn_kl"};
  std::vector<const ScoredChoice*> rows{&result.allocation};
  for (const ScoredChoice& uniform : result.uniform) rows.push_back(&uniform);
  if (result.boundary) rows.push_back(&*result.boundary);
  std::size_t name_width = 6;
  for (const ScoredChoice* row : rows) name_width = std::max(name_width, row->name.size());
  text += fmt::format("\n{:<{}}  {:>7}  {:>12}", "choice", name_width, "bits", "damage");
  for (const std::string& name : predicted) text += fmt::format("  {:>17}", "pred " + name);
  text += "\n";
  for (const ScoredChoice* row : rows) {
    text += fmt::format("{:<{}}  {:>7.4f}  {:>12.5g}", row->name, name_width, row->bits, row->damage);
    for (const std::string& name : predicted) text += fmt::format("  {:>17.5g}", *predicted_value(*row, name));
    text += "\n";
  }
  if (report.calibration) {
    const CalibrationReport& calibration = *report.calibration;
    text += fmt::format(
        "\ncalibration to the model profile ({} pairs): key weight {:.4g}, log RMS {:.3f}, Spearman rho {:.3f}\n",
        calibration.fit.pairs, calibration.fit.key_weight, calibration.fit.log_rms, calibration.fit.rank_correlation);
    for (const ProfileAgreement& entry : calibration.agreement) {
      text += fmt::format(
          "  {}: same spec on {:.0f}% of units, mean |bits difference| {:.3f}, model damage {:.5g} "
          "(the model profile's optimum {:.5g})\n",
          entry.name, 100 * entry.same_choice_share, entry.mean_abs_bits_difference, entry.reference_damage,
          entry.reference_optimum);
    }
  }
  if (!report.verification) return text + engine_text(report);

  const Verification& verification = *report.verification;
  std::vector<std::pair<std::string, const char*>> measured;
  const bool end_to_end = verification.base.has_value();
  if (!model) {
    measured.emplace_back("attn_out_rel_err", "{:.5f}");
    measured.emplace_back("attn_kl", "{:.5f}");
  }
  if (end_to_end) {
    measured.emplace_back("e2e_kld", "{:.5f}");
    measured.emplace_back("e2e_ppl_delta_pct", "{:+.3f}");
  }
  const std::string ratio_name = model ? "e2e_kld" : "attn_out_rel_err";
  text += fmt::format("\nmeasured by the sweep ({} seed{}; ± the std over seeds):\n{:<{}}  {:>7}",
                      verification.seeds.size(), verification.seeds.size() == 1 ? "" : "s", "choice", name_width,
                      "bits_kv");
  for (const auto& [name, format] : measured) text += fmt::format("  {:>22}", name);
  text += fmt::format("  {:>12}\n", "meas/pred");
  for (const ScoredChoice* row : verified_choices(result)) {
    const VerifiedRun* run = verified_run(verification, row->name);
    if (run == nullptr) continue;
    text += fmt::format("{:<{}}  {:>7.4f}", row->name, name_width, run->bits.bits_kv);
    for (const auto& [name, format] : measured) text += fmt::format("  {:>22}", measured_cell(*run, name, format));
    const std::optional<double> value = measured_mean(*run, ratio_name);
    const std::optional<double> expected = predicted_value(*row, ratio_name);
    text += value && expected && *expected != 0 ? fmt::format("  {:>12.3f}\n", *value / *expected)
                                                : fmt::format("  {:>12}\n", "-");
  }
  return text + engine_text(report);
}

}  // namespace tqlab
