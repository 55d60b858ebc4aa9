// allocation_table (allocate/allocation_document.h): the text `tqlab allocate` prints, in steps —
// the header, the unit map, the predicted rows, the calibration, the measured rows, the engine's
// best plan and the rows at the same bits.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "allocate/allocation_document.h"
#include "engine/engine.h"

namespace tqlab {
namespace {

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

std::string header_text(const AllocationReport& report) {
  const Profile& profile = report.profile;
  const AllocationResult& result = report.result;
  return fmt::format(
      "{} profile{}, {} units ({}), {} candidates; budget {:.4f} bits per value ({}); solver {}{}\n",
      profile_kind_name(profile.kind),
      is_default_engine(profile.numerics) ? std::string() : " in " + profile.numerics + "'s numerics",
      profile.units.size(), granularity_name(profile.granularity), profile.candidates.size(), result.budget.bits,
      result.budget.given, result.solver,
      result.solver == "dp" ? " (exact)" : fmt::format(" (gap {:.3g})", result.allocation.damage - result.lower_bound));
}

// The unit map: a row per layer, a column per (role, head), keys' columns first.
std::string unit_map_text(const Profile& profile, const ScoredChoice& allocation) {
  std::vector<std::string> columns;
  for (const UnitProfile& unit : profile.units) {
    if (unit.unit.layer != profile.layers.front()) break;
    columns.push_back(unit.unit.head < 0
                          ? (unit.unit.role == Role::key ? "K" : "V")
                          : fmt::format("{}.h{}", unit.unit.role == Role::key ? "K" : "V", unit.unit.head));
  }
  std::vector<std::size_t> order(columns.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return columns[a].front() == 'K' && columns[b].front() == 'V';
  });
  std::string text = "\nbits per value of each unit's spec:\n" + fmt::format("{:<6}", "layer");
  for (std::size_t column : order) text += fmt::format("  {:>6}", columns[column]);
  text += "\n";
  for (std::size_t row = 0; row < profile.layers.size(); ++row) {
    text += fmt::format("{:<6}", profile.layers[row]);
    for (std::size_t column : order) {
      const std::size_t u = row * columns.size() + column;
      const UnitProfile& unit = profile.units[u];
      const std::uint64_t bytes = unit.candidates[static_cast<std::size_t>(allocation.choice[u])].bytes;
      text += fmt::format("  {:>6.2f}", 8.0 * static_cast<double>(bytes) / static_cast<double>(unit.values));
    }
    text += "\n";
  }
  return text;
}

std::vector<const ScoredChoice*> predicted_rows(const AllocationResult& result) {
  std::vector<const ScoredChoice*> rows{&result.allocation};
  for (const ScoredChoice& uniform : result.uniform) rows.push_back(&uniform);
  if (result.boundary) rows.push_back(&*result.boundary);
  return rows;
}

std::size_t name_width(const AllocationResult& result) {
  std::size_t width = 6;
  for (const ScoredChoice* row : predicted_rows(result)) width = std::max(width, row->name.size());
  return width;
}

// A row per choice: bits, predicted damage and metrics.
std::string predicted_text(const AllocationReport& report) {
  const std::vector<std::string> predicted = report.profile.kind == ProfileKind::model
                                                 ? std::vector<std::string>{"e2e_kld", "e2e_ppl_delta_pct"}
                                                 : std::vector<std::string>{"attn_out_rel_err", "attn_kl"};
  const std::size_t width = name_width(report.result);
  std::string text = fmt::format("\n{:<{}}  {:>7}  {:>12}", "choice", width, "bits", "damage");
  for (const std::string& name : predicted) text += fmt::format("  {:>17}", "pred " + name);
  text += "\n";
  for (const ScoredChoice* row : predicted_rows(report.result)) {
    text += fmt::format("{:<{}}  {:>7.4f}  {:>12.5g}", row->name, width, row->bits, row->damage);
    for (const std::string& name : predicted) text += fmt::format("  {:>17.5g}", *predicted_value(*row, name));
    text += "\n";
  }
  return text;
}

std::string calibration_text(const CalibrationReport& calibration) {
  std::string text = fmt::format(
      "\ncalibration to the model profile ({} pairs): key weight {:.4g}, log RMS {:.3f}, Spearman rho {:.3f}\n",
      calibration.fit.pairs, calibration.fit.key_weight, calibration.fit.log_rms, calibration.fit.rank_correlation);
  for (const ProfileAgreement& entry : calibration.agreement) {
    text += fmt::format(
        "  {}: same spec on {:.0f}% of units, mean |bits difference| {:.3f}, model damage {:.5g} "
        "(the model profile's optimum {:.5g})\n",
        entry.name, 100 * entry.same_choice_share, entry.mean_abs_bits_difference, entry.reference_damage,
        entry.reference_optimum);
  }
  return text;
}

// The metrics the measured rows show, with their formats.
std::vector<std::pair<std::string, const char*>> measured_columns(const AllocationReport& report) {
  std::vector<std::pair<std::string, const char*>> measured;
  if (report.profile.kind != ProfileKind::model) {
    measured.emplace_back("attn_out_rel_err", "{:.5f}");
    measured.emplace_back("attn_kl", "{:.5f}");
  }
  if (report.verification->base) {
    measured.emplace_back("e2e_kld", "{:.5f}");
    measured.emplace_back("e2e_ppl_delta_pct", "{:+.3f}");
  }
  return measured;
}

// --verify: the measured metrics of each choice with their spread over seeds, and measured / predicted.
std::string measured_text(const AllocationReport& report) {
  const Verification& verification = *report.verification;
  const std::vector<std::pair<std::string, const char*>> measured = measured_columns(report);
  const std::string ratio_name = measured_damage_metric(report.profile);
  const std::size_t width = name_width(report.result);
  std::string text =
      fmt::format("\nmeasured by the sweep ({} seed{}; ± the std over seeds):\n{:<{}}  {:>7}",
                  verification.seeds.size(), verification.seeds.size() == 1 ? "" : "s", "choice", width, "bits_kv");
  for (const auto& [name, format] : measured) text += fmt::format("  {:>22}", name);
  text += fmt::format("  {:>12}\n", "meas/pred");
  for (const ScoredChoice* row : verified_choices(report.result)) {
    const VerifiedRun* run = verified_run(verification, row->name);
    if (run == nullptr) continue;
    text += fmt::format("{:<{}}  {:>7.4f}", row->name, width, run->bits.bits_kv);
    for (const auto& [name, format] : measured) text += fmt::format("  {:>22}", measured_cell(*run, name, format));
    const std::optional<double> value = measured_mean(*run, ratio_name);
    const std::optional<double> expected = predicted_value(*row, ratio_name);
    text += value && expected && *expected != 0 ? fmt::format("  {:>12.3f}\n", *value / *expected)
                                                : fmt::format("  {:>12}\n", "-");
  }
  return text;
}

// The engine's lines of the table: its best plan against the allocation, the flags, and with
// --verify the plan measured under the engine itself and under tqlab's semantics.
std::string engine_text(const AllocationReport& report) {
  const EngineAllocation& engine = *report.engine;
  const ScoredChoice& allocation = report.result.allocation;
  std::string text = fmt::format("\nengine {}: {}\n", engine.engine, engine.shape);
  if (!engine.best) return text + fmt::format("  no plan fits {:.4f} bits per value\n", report.result.budget.bits);
  const EnginePlan& best = engine.plans[*engine.best];
  text += fmt::format(
      "  best within the budget: {:.4f} bits, predicted damage {:.5g} (the allocation: {:.5g} at {:.4f} bits)\n"
      "  run it with: {}\n",
      best.scored.bits, best.scored.damage, allocation.damage, allocation.bits, engine.invocation);
  if (const std::string loader_file = engine_loader_file(engine); !loader_file.empty()) {
    text += fmt::format("  with {} beside the checkpoint (--engine-config FILE writes it): {}\n", loader_file,
                        engine_loader_config(engine).dump());
  }
  if (!report.verification) return text;
  if (engine.profile_best) {
    text += fmt::format("  chosen by measurement among {} plans it can run at the budget; the profile's pick was {}\n",
                        engine.contenders.size(), engine.plans[*engine.profile_best].scored.name);
  }
  for (const std::string& name : std::vector<std::string>{engine_run_name(engine), best.scored.name, allocation.name}) {
    const VerifiedRun* run = verified_run(*report.verification, name);
    if (run == nullptr) continue;
    text += fmt::format("  measured, {}: bits_kv {:.4f}, e2e_kld {}, e2e_ppl_delta_pct {}\n",
                        name == best.scored.name ? name + " (tqlab's semantics)" : name, run->bits.bits_kv,
                        measured_cell(*run, "e2e_kld", "{:.5f}"), measured_cell(*run, "e2e_ppl_delta_pct", "{:+.3f}"));
  }
  return text;
}

// A row at the same bits: its name, kind, bits and predicted damage, and with --verify the measured
// damage metric (and perplexity change end to end); a rule over the budget says so instead.
std::string same_bits_line(const AllocationReport& report, const SameBitsRow& row, std::size_t width) {
  std::string text = fmt::format("{:<{}}  {:<9}  {:>7.4f}", row.label, width, row.kind, row.scored.bits);
  if (!row.fits) return text + "  over the budget (its cheapest plan)\n";
  text += fmt::format("  {:>12.5g}", row.scored.damage);
  const VerifiedRun* run = report.verification ? verified_run(*report.verification, row.scored.name) : nullptr;
  if (run == nullptr)
    return text + (row.on_other ? "  (predicted per " +
                                      std::string(granularity_name(report.same_bits->other.granularity)) + ")\n"
                                : "\n");
  text += fmt::format("  {:>18}", measured_cell(*run, measured_damage_metric(report.profile), "{:.5f}"));
  if (report.verification->base) text += fmt::format("  {:>18}", measured_cell(*run, "e2e_ppl_delta_pct", "{:+.3f}"));
  return text + "\n";
}

// How much less damage each unconstrained optimum has than the engine's best plan, predicted and measured.
std::string optimum_gain_text(const AllocationReport& report) {
  const std::vector<SameBitsRow>& rows = report.same_bits->rows;
  const auto engine =
      std::find_if(rows.begin(), rows.end(), [](const SameBitsRow& row) { return row.kind == "engine"; });
  if (engine == rows.end()) return "";
  const std::string metric = measured_damage_metric(report.profile);
  const auto measured = [&](const SameBitsRow& row) -> std::optional<double> {
    return report.verification ? measured_mean(*report.verification, row.scored.name, metric) : std::nullopt;
  };
  std::string text;
  for (const SameBitsRow& row : rows) {
    if (row.kind != "optimum") continue;
    const std::optional<double> predicted = optimum_damage_saved(*report.same_bits, row);
    text += fmt::format(
        "  the {} has {} less predicted damage than {}{}", row.label,
        predicted ? fmt::format("{:.1f}%", 100 * *predicted) : "-", engine->label,
        row.on_other ? fmt::format(" (both by the {} profile)", granularity_name(report.same_bits->other.granularity))
                     : "");
    const std::optional<double> ours = measured(row), theirs = measured(*engine);
    const std::optional<double> saved = ours && theirs ? damage_saved(*ours, *theirs) : std::nullopt;
    text += saved ? fmt::format(", {:.1f}% less measured {}\n", 100 * *saved, metric) : "\n";
  }
  return text;
}

// --engine: the engine's best plan beside the optima and the rules at the same budget.
std::string same_bits_text(const AllocationReport& report) {
  std::size_t width = 4;
  for (const SameBitsRow& row : report.same_bits->rows) width = std::max(width, row.label.size());
  std::string text = fmt::format(
      "\nat the same bits ({:.4f} per value), predicted by the {} profile{}:\n{:<{}}  {:<9}  "
      "{:>7}  {:>12}",
      report.result.budget.bits, granularity_name(report.profile.granularity),
      !report.verification ? ""
      : is_default_engine(report.profile.numerics)
          ? " and measured"
          : fmt::format(" in {}'s numerics and measured in tqlab's semantics", report.profile.numerics),
      "row", width, "kind", "bits", "damage");
  if (report.verification) {
    text += fmt::format("  {:>18}", "meas " + measured_damage_metric(report.profile));
    if (report.verification->base) text += fmt::format("  {:>18}", "e2e_ppl_delta_pct");
  }
  text += "\n";
  for (const SameBitsRow& row : report.same_bits->rows) text += same_bits_line(report, row, width);
  return text + optimum_gain_text(report);
}

}  // namespace

std::string allocation_table(const AllocationReport& report) {
  std::string text =
      header_text(report) + unit_map_text(report.profile, report.result.allocation) + predicted_text(report);
  if (report.calibration) text += calibration_text(*report.calibration);
  if (report.verification) text += measured_text(report);
  if (report.engine) text += engine_text(report);
  if (report.same_bits) text += same_bits_text(report);
  return text;
}

}  // namespace tqlab
