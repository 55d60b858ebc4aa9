// tqlab verify-bounds: TurboQuant's theorems against the codebook's integrals
// and Monte Carlo (src/theory/verify_bounds.h); prints a table, writes JSON.
#include <cmath>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "theory/verify_bounds.h"
#include "theory/verify_bounds_json.h"

namespace tqlab::cli {
namespace {

struct VerifyBoundsCommandOptions {
  VerifyBoundsOptions bounds;
  std::string json_path;
  CLI::Option* inner_product_samples = nullptr;
  CLI::Option* rotation_samples = nullptr;
};

std::string estimator_triplet(const BoundsRow& row, InnerProductEstimator estimator) {
  std::vector<std::string> values;
  for (const InnerProductResult& result : row.inner_products) {
    values.push_back(
        fmt::format("{:.3g}", result.estimators[static_cast<std::size_t>(estimator)].scaled_squared_error.mean));
  }
  return fmt::format("{}", fmt::join(values, " / "));
}

std::string z_or_dash(const BoundsRow& row, const std::string& rotation) {
  for (const RotationDistortion& result : row.rotations) {
    if (result.rotation == rotation) return fmt::format("{:.2f}", result.z);
  }
  return "-";
}

// Theorem 1's table: per row, D_mse's theory, measurement and z, the real quantizer's z per rotation, and the
// bounds.
void print_d_mse_table(const BoundsReport& report) {
  const VerifyBoundsOptions& options = report.options;
  fmt::print("D_mse = E|x - Q(x)|^2 of a unit x (Theorem 1). Monte Carlo: {} uniform unit vectors per row quantized\n"
             "directly; {} through the real tq quantizer per rotation. z = (measured - theory) / standard error.\n",
             options.samples, options.rotation_samples);
  fmt::print("{:>5} {:>2}  {:>9}  {:>21}  {:>6}  {:>6}  {:>8}  {:>8}  {:>8}  {:>5}  {:>6}  {}\n", "dim", "b", "theory",
             "measured +- se", "z", "haar z", "hadam. z", "4^-b", "upper", "ratio", "paper", "row");
  for (const BoundsRow& row : report.rows) {
    fmt::print(
        "{:>5} {:>2}  {:>9.6f}  {:>9.6f} +- {:<8.6f}  {:>6.2f}  {:>6}  {:>8}  {:>8.6f}  {:>8.6f}  {:>5.2f}  {:>6}  "
        "{}\n",
        row.dim, row.bits, row.d_mse_theory, row.d_mse_empirical.mean, row.d_mse_empirical.standard_error, row.d_mse_z,
        z_or_dash(row, "haar"), z_or_dash(row, "hadamard"), row.lower_bound, row.upper_bound, row.ratio_to_lower_bound,
        row.paper_d_mse ? fmt::format("{:g}", *row.paper_d_mse) : "-", row.ok ? "ok" : "FAILED");
  }
}

// The structured inputs' table (one-hot vectors per rotation), when any row measured them.
void print_one_hot_table(const BoundsReport& report) {
  bool any_one_hot = false;
  for (const BoundsRow& row : report.rows) any_one_hot = any_one_hot || !row.one_hot.empty();
  if (!any_one_hot) return;
  fmt::print(
      "\nStructured inputs: the d one-hot vectors through the real tq quantizer per rotation (docs/ROTATIONS.md).\n"
      "D_mse (z against theory) and the debiased <x~,x> (1 = unbiased; z against 1). Haar must match;\n"
      "one Hadamard round gives every coordinate +-1/sqrt(d), an exact error shown as 'pred'.\n");
  fmt::print("{:>5} {:>2}  {:>9}  {}\n", "dim", "b", "theory", "per rotation: D_mse (z) | debiased <x~,x> (z)");
  for (const BoundsRow& row : report.rows) {
    std::vector<std::string> cells;
    for (const OneHotDeviation& result : row.one_hot) {
      const std::string d_mse = result.d_mse_predicted
                                    ? fmt::format("{:.4f} (pred {:.4f})", result.d_mse.mean, *result.d_mse_predicted)
                                    : fmt::format("{:.4f} ({:+.1f})", result.d_mse.mean, result.d_mse_z);
      cells.push_back(fmt::format("{} {} | {:.4f} ({:+.1f})", result.rotation, d_mse,
                                  result.debiased_inner_product.mean, result.debiased_inner_product_z));
    }
    fmt::print("{:>5} {:>2}  {:>9.6f}  {}\n", row.dim, row.bits, row.d_mse_theory, fmt::join(cells, "   "));
  }
}

// Theorem 2's table: per row, the prod estimator's measured error against its prediction at each <y,x>, and the
// paper's constant against the formula.
void print_prod_table(const BoundsReport& report) {
  const VerifyBoundsOptions& options = report.options;
  fmt::print("\nTheorem 2, prod (b-1 bits + 1-bit QJL, m = d, unit y): d*E[(<y,x~> - <y,x>)^2] at <y,x> = {}\n"
             "predicted (d/m)*[(pi/2)*D_mse(b-1) - E<y,r>^2]; the paper's constant beside (pi/2)*D_mse(b-1)\n",
             fmt::join(options.inner_products, " / "));
  fmt::print("{:>5} {:>2}  {:>12}  {:>6}  {:>16}  {}\n", "dim", "b", "(pi/2)D(b-1)", "paper", "paper vs formula",
             "measured (predicted, z)");
  for (const BoundsRow& row : report.rows) {
    std::vector<std::string> cells;
    for (const InnerProductResult& result : row.inner_products) {
      cells.push_back(fmt::format(
          "{:.4g} ({:.4g}, {:.1f})",
          result.estimators[static_cast<std::size_t>(InnerProductEstimator::prod)].scaled_squared_error.mean,
          result.prod_predicted, result.prod_z));
    }
    std::string paper = "-", versus;
    if (row.paper_prod) {
      paper = fmt::format("{:g}", row.paper_prod->published);
      versus = fmt::format("{:+.1f}%{}", 100 * row.paper_prod->relative_difference,
                           row.paper_prod->disagrees ? " ERRATUM" : "");
    }
    fmt::print("{:>5} {:>2}  {:>12.4f}  {:>6}  {:>16}  {}\n", row.dim, row.bits, row.prod_formula, paper, versus,
               fmt::join(cells, "  "));
  }
}

// The three inner-product estimators' d*E[err^2] per row, and the largest |z| of the row's bias checks.
void print_estimator_table(const BoundsReport& report) {
  fmt::print("\nInner-product estimators, d*E[err^2] at <y,x> = {} (a published reproduction's table is at d = 128)\n",
             fmt::join(report.options.inner_products, " / "));
  fmt::print("{:>5} {:>2}  {:<26}  {:<26}  {:<26}  {}\n", "dim", "b", "biased <y,Q(x)>", "debiased /(1 - D_b)",
             "prod", "largest |z| of the biases");
  for (const BoundsRow& row : report.rows) {
    double largest = 0;
    for (const BoundsCheck& check : row.checks) {
      if (check.name.starts_with("bias.")) largest = std::max(largest, std::fabs(check.z));
    }
    fmt::print("{:>5} {:>2}  {:<26}  {:<26}  {:<26}  {:.2f}\n", row.dim, row.bits,
               estimator_triplet(row, InnerProductEstimator::biased),
               estimator_triplet(row, InnerProductEstimator::debiased),
               estimator_triplet(row, InnerProductEstimator::prod), largest);
  }
}

// The closing line: rows, checks, failures, the largest |z| of any check, and the run's seconds.
void print_summary(const BoundsReport& report) {
  double largest_z = 0;
  for (const BoundsRow& row : report.rows) {
    for (const BoundsCheck& check : row.checks) {
      if (!std::isnan(check.z)) largest_z = std::max(largest_z, std::fabs(check.z));
    }
  }
  const auto failures = report.failures();
  fmt::print("\n{} rows, {} checks (Monte Carlo ones pass at |z| <= {:g}), {} failed; largest |z| {:.2f}; {:.1f} s\n",
             report.rows.size(), report.check_count(), report.options.tolerance_z, failures.size(), largest_z,
             report.seconds);
}

// One note per bit width whose published constant disagrees, listing every dim measured.
void print_erratum_notes(const BoundsReport& report) {
  std::map<int, std::vector<const BoundsRow*>> disagreeing;
  for (const BoundsRow& row : report.rows) {
    if (row.paper_prod && row.paper_prod->disagrees) disagreeing[row.bits].push_back(&row);
  }
  for (const auto& [bits, rows] : disagreeing) {
    std::vector<std::string> formulas, dims;
    for (const BoundsRow* row : rows) {
      formulas.push_back(fmt::format("{:.4f}", row->prod_formula));
      dims.push_back(std::to_string(row->dim));
    }
    fmt::print("note: Theorem 2's published constant {:g} at b = {} disagrees with its own formula "
               "(pi/2)*D_mse({}) = {} at d = {}\n",
               rows.front()->paper_prod->published, bits, bits - 1, fmt::join(formulas, " / "), fmt::join(dims, " / "));
  }
}

void print_report(const BoundsReport& report) {
  print_d_mse_table(report);
  print_one_hot_table(report);
  print_prod_table(report);
  print_estimator_table(report);
  print_summary(report);
  print_erratum_notes(report);
}

int run_verify_bounds(VerifyBoundsCommandOptions& command) {
  VerifyBoundsOptions& options = command.bounds;
  // Unless given, the inner-product run follows --samples and the real-rotation run takes a tenth.
  if (command.inner_product_samples->count() == 0) options.inner_product_samples = options.samples;
  if (command.rotation_samples->count() == 0)
    options.rotation_samples = std::max<std::int64_t>(options.samples / 10, 10);
  validate_verify_bounds_options(options);

  const bool json_to_stdout = command.json_path == "-";
  // Opened before the run, so that an unwritable path fails at once, not after it.
  std::unique_ptr<AtomicFileWriter> json_file;
  if (!command.json_path.empty() && !json_to_stdout) {
    guard_output("verify-bounds", "--json", command.json_path, {});
    json_file = std::make_unique<AtomicFileWriter>(command.json_path);
  }

  const BoundsReport report = verify_bounds(options);
  if (json_to_stdout) {
    fmt::print("{}\n", bounds_report_json(report).dump(2));
  } else {
    print_report(report);
  }
  if (json_file) {
    json_file->write(bounds_report_json(report).dump(2) + "\n");
    json_file->commit();
    log::info("wrote {}", command.json_path);
  }
  if (report.all_ok) return kExitOk;
  const auto failures = report.failures();
  for (const std::string& failure : failures) log::error("{}", failure);
  log::error("verify-bounds: {} of {} checks failed", failures.size(), report.check_count());
  return kExitDifference;
}

}  // namespace

void setup_verify_bounds(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<VerifyBoundsCommandOptions>();
  VerifyBoundsOptions& bounds = options->bounds;
  auto* command = app.add_subcommand(
      "verify-bounds",
      command_description(
          "Check TurboQuant's theorems: theory vs Monte Carlo vs the bounds",
          "Per (dim, bits), with the paper's constants and a published reproduction; exit 1 when a check fails.",
          "tqlab-verify-bounds"));
  // Each count's range is validate_verify_bounds_options's to check, with its own message.
  const auto count = [&](CLI::Option* option) { return decimal(option, kMinIntOption, kMaxIntOption); };
  const auto samples = [&](CLI::Option* option) { return decimal(option, INT64_MIN, INT64_MAX); };
  count(command->add_option("--dims", bounds.dims, "Dimensions d, 2..4096 (comma list)"))
      ->delimiter(',')
      ->default_str("64,128,256");
  count(command->add_option("--bits", bounds.bits, "Bit widths b, 1..8 (comma list)"))
      ->delimiter(',')
      ->default_str("1,2,3,4");
  samples(command->add_option("--samples", bounds.samples, "Monte Carlo unit vectors per row for D_mse (direct path)"))
      ->capture_default_str();
  options->inner_product_samples = samples(
      command->add_option("--ip-samples", bounds.inner_product_samples,
                          "Pairs (x, y) per row and <y,x> for the inner-product estimators (default: --samples)"));
  options->rotation_samples = samples(command->add_option(
      "--rotation-samples", bounds.rotation_samples,
      "Vectors per row and rotation through the real tq quantizer (default: --samples / 10; 0 skips)"));
  add_seed_option(*command, bounds.seed, "Random seed");
  command->add_option("--tolerance-z", bounds.tolerance_z,
                      "A Monte Carlo check passes when |z| <= this. A default run makes 216 such comparisons, "
                      "so a 95% interval (|z| <= 2) would fail by chance on nearly every run")
      ->capture_default_str();
  count(command->add_option("--histogram-bins", bounds.histogram_bins, "Bins per inner-product error histogram"))
      ->capture_default_str();
  command->add_option("--json", options->json_path,
                      "Also write everything as JSON (schema tqlab.bounds/2) to this file; '-' prints the JSON "
                      "to stdout instead of the table");
  command->callback([options, &exit_code] { exit_code = run_verify_bounds(*options); });
}

}  // namespace tqlab::cli
