#include "theory/verify_bounds_json.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "results/results_document.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

// JSON has no NaN or infinity: exact checks' z (NaN) and absent values are null.
nlohmann::json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json estimate_json(const Estimate& estimate) {
  return {{"mean", estimate.mean}, {"standard_error", estimate.standard_error}, {"samples", estimate.samples}};
}

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json histogram_counts_json(const Histogram& histogram) {
  return {{"counts", histogram.counts()}, {"below", histogram.below()}, {"above", histogram.above()}};
}

// The row's direct-path D_mse estimate with its z, and the interval the check accepts the theory in: mean ±
// tolerance_z standard errors.
nlohmann::json d_mse_empirical_json(const BoundsRow& row, double tolerance_z) {
  nlohmann::json out = estimate_json(row.d_mse_empirical);
  out["z"] = number_or_null(row.d_mse_z);
  out["interval"] = {row.d_mse_empirical.mean - tolerance_z * row.d_mse_empirical.standard_error,
                     row.d_mse_empirical.mean + tolerance_z * row.d_mse_empirical.standard_error};
  return out;
}

// D_mse through the real quantizer, one entry per rotation.
nlohmann::json rotations_json(const BoundsRow& row) {
  nlohmann::json out = nlohmann::json::array();
  for (const RotationDistortion& rotation : row.rotations) {
    nlohmann::json entry = estimate_json(rotation.d_mse);
    entry["rotation"] = rotation.rotation;
    entry["spec"] = rotation.spec;
    entry["z"] = number_or_null(rotation.z);
    out.push_back(entry);
  }
  return out;
}

// The one-hot inputs' D_mse and debiased <x~,x>, one entry per rotation.
nlohmann::json one_hot_json(const BoundsRow& row) {
  nlohmann::json out = nlohmann::json::array();
  for (const OneHotDeviation& result : row.one_hot) {
    out.push_back({{"rotation", result.rotation},
                   {"spec", result.spec},
                   {"seeds", result.seeds},
                   {"d_mse", estimate_json(result.d_mse)},
                   {"d_mse_z", number_or_null(result.d_mse_z)},
                   {"d_mse_predicted", optional_json(result.d_mse_predicted)},
                   {"debiased_inner_product", estimate_json(result.debiased_inner_product)},
                   {"debiased_inner_product_z", number_or_null(result.debiased_inner_product_z)}});
  }
  return out;
}

// Theorem 2's prod estimator, d * D_prod: the formula, its bounds, and the paper's constant when published.
nlohmann::json theorem2_json(const BoundsRow& row) {
  nlohmann::json theorem2 = {{"units", "d * D_prod = d * E[(<y,x~> - <y,x>)^2], unit y"},
                             {"projections", row.projections},
                             {"d_mse_bits_minus_1", row.d_mse_bits_minus_1},
                             {"formula", row.prod_formula},
                             {"upper_bound", row.prod_upper_bound},
                             {"lower_bound", row.prod_lower_bound},
                             {"paper", nullptr},
                             {"paper_relative_difference", nullptr},
                             {"paper_disagrees", false}};
  if (row.paper_prod) {
    theorem2["paper"] = row.paper_prod->published;
    theorem2["paper_relative_difference"] = row.paper_prod->relative_difference;
    theorem2["paper_disagrees"] = row.paper_prod->disagrees;
  }
  return theorem2;
}

// One estimator at one <y,x>: its bias against the expected one, d*E[err^2], and the reproduction's value.
nlohmann::json estimator_cell_json(const EstimatorResult& cell) {
  return {{"bias", estimate_json(cell.error)},
          {"expected_bias", cell.expected_bias},
          {"bias_z", number_or_null(cell.bias_z)},
          {"scaled_mse", estimate_json(cell.scaled_squared_error)},
          {"reproduction", cell.reproduction ? nlohmann::json(cell.reproduction->value) : nlohmann::json()},
          {"reproduction_z", number_or_null(cell.reproduction_z)}};
}

// The three estimators per <y,x>, each by name, with prod's prediction and residual terms under "prod".
nlohmann::json inner_products_json(const BoundsRow& row) {
  nlohmann::json out = nlohmann::json::array();
  for (const InnerProductResult& result : row.inner_products) {
    nlohmann::json entry;
    entry["inner_product"] = result.inner_product;
    for (InnerProductEstimator estimator : kInnerProductEstimators) {
      const EstimatorResult& cell = result.estimators[static_cast<std::size_t>(estimator)];
      entry[std::string(inner_product_estimator_name(estimator))] = estimator_cell_json(cell);
    }
    entry["prod"]["predicted"] = result.prod_predicted;
    entry["prod"]["predicted_z"] = number_or_null(result.prod_z);
    entry["prod"]["residual_norm2"] = estimate_json(result.residual_norm2);
    entry["prod"]["scaled_y_dot_residual2"] = estimate_json(result.scaled_y_dot_residual2);
    out.push_back(entry);
  }
  return out;
}

// The row's checks: each one's value against what it expects, z (null for exact ones), and whether it passed.
nlohmann::json checks_json(const BoundsRow& row) {
  nlohmann::json out = nlohmann::json::array();
  for (const BoundsCheck& check : row.checks) {
    out.push_back({{"name", check.name},
                   {"value", check.value},
                   {"expected", check.expected},
                   {"z", number_or_null(check.z)},
                   {"ok", check.ok},
                   {"detail", check.detail}});
  }
  return out;
}

nlohmann::json row_json(const BoundsRow& row, double tolerance_z) {
  nlohmann::json out;
  out["dim"] = row.dim;
  out["bits"] = row.bits;
  out["centroids"] = row.centroids;
  out["d_mse_theory"] = row.d_mse_theory;
  out["d_mse_empirical"] = d_mse_empirical_json(row, tolerance_z);
  out["d_mse_rotations"] = rotations_json(row);
  out["one_hot"] = one_hot_json(row);
  out["theorem1"] = {{"upper_bound", row.upper_bound},
                     {"lower_bound", row.lower_bound},
                     {"lower_bound_applies", row.lower_bound_applies},
                     {"ratio_to_lower_bound", row.ratio_to_lower_bound},
                     {"paper", optional_json(row.paper_d_mse)}};
  out["theorem2"] = theorem2_json(row);
  out["inner_products"] = inner_products_json(row);
  out["checks"] = checks_json(row);
  out["ok"] = row.ok;
  return out;
}

}  // namespace

nlohmann::json bounds_report_json(const BoundsReport& report) {
  const VerifyBoundsOptions& options = report.options;
  nlohmann::json out;
  out["schema"] = kBoundsSchema;
  out["tqlab_version"] = TQLAB_VERSION;
  out["git_commit"] = TQLAB_GIT_COMMIT;
  out["settings"] = {{"dims", options.dims},
                     {"bits", options.bits},
                     {"samples", options.samples},
                     {"inner_product_samples", options.inner_product_samples},
                     {"rotation_samples", options.rotation_samples},
                     {"rotation_tokens_per_seed", kTokensPerRotation},
                     {"inner_products", options.inner_products},
                     {"seed", options.seed},
                     {"tolerance_z", options.tolerance_z},
                     {"histogram_bins", options.histogram_bins},
                     {"projections", "d"},
                     {"codebook", "beta"}};
  out["rows"] = nlohmann::json::array();
  out["histograms"] = nlohmann::json::array();
  for (const BoundsRow& row : report.rows) {
    out["rows"].push_back(row_json(row, options.tolerance_z));
    for (const EstimatorHistograms& histograms : row.histograms) {
      nlohmann::json entry = {{"dim", row.dim},
                              {"bits", row.bits},
                              {"estimator", inner_product_estimator_name(histograms.estimator)},
                              {"unit", "<y,x~> - <y,x> for unit x, y"},
                              {"lo", histograms.overall.lo()},
                              {"hi", histograms.overall.hi()},
                              {"bins", histograms.overall.bins()},
                              {"overall", histogram_counts_json(histograms.overall)},
                              {"by_inner_product", nlohmann::json::array()}};
      for (std::size_t group = 0; group < histograms.by_inner_product.size(); ++group) {
        nlohmann::json counts = histogram_counts_json(histograms.by_inner_product[group]);
        counts["inner_product"] = options.inner_products[group];
        entry["by_inner_product"].push_back(counts);
      }
      out["histograms"].push_back(entry);
    }
  }
  const std::vector<std::string> failures = report.failures();
  double largest_z = 0;
  for (const BoundsRow& row : report.rows) {
    for (const BoundsCheck& check : row.checks) {
      if (!std::isnan(check.z)) largest_z = std::max(largest_z, std::fabs(check.z));
    }
  }
  out["summary"] = {{"rows", report.rows.size()},
                    {"checks", report.check_count()},
                    {"failed", failures.size()},
                    {"failures", failures},
                    {"largest_abs_z", number_or_null(largest_z)}};
  out["timing"] = {{"seconds", report.seconds}};
  out["all_ok"] = report.all_ok;
  return out;
}

}  // namespace tqlab
