// `tqlab verify-bounds` rows and runs (src/theory/verify_bounds.h): small-d
// goldens, where the Shannon bound applies, the numpy reproduction's checks at d = 128, the
// real rotations, histograms, determinism, JSON, failures and bad options.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "theory/verify_bounds.h"
#include "theory/verify_bounds_json.h"

namespace tqlab {
namespace {

using io_test::throws_input_error;

/// A Monte Carlo comparison passes at this many standard errors, as verify-bounds does.
constexpr double kZ = 4;

VerifyBoundsOptions quick_options(std::int64_t samples = 400) {
  VerifyBoundsOptions options;
  options.samples = samples;
  options.inner_product_samples = samples;
  options.rotation_samples = 0;
  options.histogram_bins = 16;
  return options;
}

const BoundsCheck* find_check(const BoundsRow& row, const std::string& name) {
  for (const BoundsCheck& check : row.checks) {
    if (check.name == name) return &check;
  }
  return nullptr;
}

TEST(VerifyBoundsRowTest, SmallDimensionGoldens) {
  // d = 3: the coordinate is uniform on [−1, 1], Lloyd–Max is uniform, D = 4^−b exactly.
  // d = 8: 0.3224, 0.0948, 0.0261, 0.0069 (the numpy reproduction's small-d check).
  const double golden_d8[] = {0.3224, 0.0948, 0.0261, 0.0069};
  const VerifyBoundsOptions options = quick_options();
  for (int bits = 1; bits <= 4; ++bits) {
    const BoundsRow three = verify_bounds_row(3, bits, options);
    EXPECT_NEAR(three.d_mse_theory, std::pow(4.0, -bits), 1e-12);
    EXPECT_NEAR(three.ratio_to_lower_bound, 1.0, 1e-10);
    ASSERT_NE(find_check(three, "theorem1.lower"), nullptr);
    EXPECT_TRUE(find_check(three, "theorem1.lower")->ok) << "equality must pass at d = 3, b = " << bits;
    const BoundsRow eight = verify_bounds_row(8, bits, options);
    EXPECT_NEAR(eight.d_mse_theory, golden_d8[bits - 1], 5e-5) << bits;
    EXPECT_TRUE(eight.ok) << bits;
  }
}

TEST(VerifyBoundsRowTest, ShannonBoundIsNotAppliedAtTwoDimensions) {
  // The arcsine marginal at d = 2 quantizes below 4^−b: the asymptotic bound does not apply.
  const BoundsRow row = verify_bounds_row(2, 2, quick_options());
  EXPECT_LT(row.d_mse_theory, row.lower_bound);
  EXPECT_FALSE(row.lower_bound_applies);
  EXPECT_EQ(find_check(row, "theorem1.lower"), nullptr);
  EXPECT_TRUE(row.ok);
}

TEST(VerifyBoundsRowTest, Dim128RowCarriesReproductionChecks) {
  const BoundsRow row = verify_bounds_row(128, 2, quick_options());
  EXPECT_NEAR(row.d_mse_theory, 0.1160, 5e-5);
  EXPECT_NEAR(row.ratio_to_lower_bound, 1.86, 5e-3);
  for (const char* name :
       {"reproduction.d_mse", "reproduction.centroid0", "reproduction.centroid1", "reproduction.biased@0",
        "reproduction.debiased@0.5", "reproduction.prod@0.9", "theorem1.upper", "theorem1.lower", "theorem2.bounds",
        "d_mse_empirical", "bias.prod@0.5", "prod_variance@0.9"}) {
    const BoundsCheck* check = find_check(row, name);
    ASSERT_NE(check, nullptr) << name;
    EXPECT_TRUE(check->ok) << name << ": " << check->value << " vs " << check->expected << ", z " << check->z;
  }
  EXPECT_TRUE(std::isnan(find_check(row, "reproduction.d_mse")->z));  // an exact check
  EXPECT_FALSE(std::isnan(find_check(row, "bias.prod@0.5")->z));
  EXPECT_TRUE(row.ok);
  // Other dims carry no seed-001 comparisons.
  const BoundsRow other = verify_bounds_row(64, 2, quick_options());
  EXPECT_EQ(find_check(other, "reproduction.d_mse"), nullptr);
  EXPECT_FALSE(other.inner_products[0].estimators[0].reproduction.has_value());
}

TEST(VerifyBoundsRowTest, HistogramsCountEverySample) {
  VerifyBoundsOptions options = quick_options(300);
  const BoundsRow row = verify_bounds_row(16, 2, options);
  ASSERT_EQ(row.histograms.size(), 3u);
  for (const EstimatorHistograms& histograms : row.histograms) {
    ASSERT_EQ(histograms.by_inner_product.size(), options.inner_products.size());
    std::int64_t pooled = 0;
    for (const Histogram& group : histograms.by_inner_product) {
      EXPECT_EQ(group.total(), 300);
      EXPECT_EQ(group.bins(), 16);
      EXPECT_EQ(group.lo(), histograms.overall.lo());
      pooled += group.total();
    }
    EXPECT_EQ(histograms.overall.total(), pooled);
    // ±4 rms of the widest group: nearly everything lands inside.
    EXPECT_LT(histograms.overall.below() + histograms.overall.above(), pooled / 100 + 1);
  }
}

TEST(VerifyBoundsRowTest, RealRotationsMatchTheoryAndHadamardOnlyForPowersOfTwo) {
  VerifyBoundsOptions options = quick_options();
  options.rotation_samples = 400;
  const BoundsRow power = verify_bounds_row(32, 3, options);
  ASSERT_EQ(power.rotations.size(), 3u);
  EXPECT_EQ(power.rotations[0].spec, "tq:b=3,rot=haar,norm=fp32");
  EXPECT_EQ(power.rotations[1].rotation, "hadamard");
  EXPECT_EQ(power.rotations[2].rotation, "hadamard2");
  for (const RotationDistortion& rotation : power.rotations) {
    EXPECT_EQ(rotation.d_mse.samples, 400);
    EXPECT_LT(std::fabs(rotation.z), kZ) << rotation.rotation;
  }
  const BoundsRow odd = verify_bounds_row(24, 3, options);
  ASSERT_EQ(odd.rotations.size(), 1u);
  EXPECT_EQ(odd.rotations[0].rotation, "haar");
}

// The structured-input check: one-hot inputs per rotation. Haar must match
// theory (checked by z), one Hadamard round must give exactly its predicted
// error d*(c - 1/sqrt(d))^2 (checked exactly), hadamard2 is reported.
TEST(VerifyBoundsRowTest, OneHotDeviationIsReportedPerRotation) {
  VerifyBoundsOptions options = quick_options();
  options.rotation_samples = 1024;  // 8 rotations of the 128 one-hot vectors
  const BoundsRow row = verify_bounds_row(128, 2, options);
  ASSERT_EQ(row.one_hot.size(), 3u);
  EXPECT_EQ(row.one_hot[0].rotation, "haar");
  EXPECT_EQ(row.one_hot[0].seeds, 8);
  EXPECT_LT(std::fabs(row.one_hot[0].d_mse_z), kZ);
  EXPECT_NEAR(row.one_hot[1].d_mse.mean, 0.2552, 5e-5) << "the review's number";
  ASSERT_TRUE(row.one_hot[1].d_mse_predicted.has_value());
  EXPECT_NEAR(*row.one_hot[1].d_mse_predicted, 0.2552, 5e-5);
  EXPECT_NEAR(row.one_hot[1].debiased_inner_product.mean, 1.7027, 5e-5);
  EXPECT_FALSE(row.one_hot[2].d_mse_predicted.has_value());
  for (const char* name : {"one_hot.haar.d_mse", "one_hot.haar.debias", "one_hot.hadamard.d_mse"}) {
    const BoundsCheck* check = find_check(row, name);
    ASSERT_NE(check, nullptr) << name;
    EXPECT_TRUE(check->ok) << name << ": " << check->value << " vs " << check->expected;
  }
  EXPECT_EQ(find_check(row, "one_hot.hadamard2.d_mse"), nullptr) << "reported, not checked";
  const BoundsRow odd = verify_bounds_row(24, 2, quick_options(200));
  EXPECT_TRUE(odd.one_hot.empty()) << "rotation_samples = 0 skips it";
}

TEST(VerifyBoundsRowTest, DeterministicForASeedAndDifferentAcrossSeeds) {
  VerifyBoundsOptions options = quick_options(200);
  options.rotation_samples = 20;
  const BoundsRow a = verify_bounds_row(16, 3, options);
  const BoundsRow b = verify_bounds_row(16, 3, options);
  options.seed = 1;
  const BoundsRow c = verify_bounds_row(16, 3, options);
  EXPECT_EQ(a.d_mse_empirical.mean, b.d_mse_empirical.mean);
  EXPECT_EQ(a.rotations[0].d_mse.mean, b.rotations[0].d_mse.mean);
  EXPECT_EQ(a.inner_products[1].estimators[2].error.mean, b.inner_products[1].estimators[2].error.mean);
  EXPECT_NE(a.d_mse_empirical.mean, c.d_mse_empirical.mean);
}

// The numpy reproduction's inner-product table (d = 128, b = 1..4, three estimators at
// <y, x> = 0, 0.5, 0.9) by the direct path, each cell within Monte Carlo error.
TEST(VerifyBoundsRowTest, DirectPathReproducesThePublishedReproductionInnerProductTable) {
  const VerifyBoundsOptions options = quick_options(5000);
  int compared = 0;
  for (int bits = 1; bits <= 4; ++bits) {
    const BoundsRow row = verify_bounds_row(128, bits, options);
    for (const BoundsCheck& check : row.checks) {
      if (!check.name.starts_with("reproduction.")) continue;
      ++compared;
      EXPECT_TRUE(check.ok) << "b=" << bits << " " << check.name << ": " << check.value << " vs " << check.expected
                            << ", z " << check.z;
    }
  }
  EXPECT_EQ(compared, 4 * (1 + 9) + 2);  // d_mse and nine cells per b, two centroids at b = 2
}

// ---------------------------------------------------------------------------
// Whole runs

TEST(VerifyBoundsTest, SmallRunPassesAndItsJsonCarriesEveryPart) {
  VerifyBoundsOptions options = quick_options(500);
  options.dims = {16, 24};
  options.bits = {1, 2};
  options.rotation_samples = 50;
  const BoundsReport report = verify_bounds(options);
  ASSERT_EQ(report.rows.size(), 4u);
  EXPECT_EQ(report.rows[1].dim, 16);
  EXPECT_EQ(report.rows[1].bits, 2);
  EXPECT_TRUE(report.all_ok) << (report.failures().empty() ? "" : report.failures()[0]);
  EXPECT_TRUE(report.failures().empty());

  const nlohmann::json json = bounds_report_json(report);
  EXPECT_EQ(json["schema"], "tqlab.bounds/2");
  EXPECT_EQ(json["all_ok"], true);
  ASSERT_EQ(json["rows"].size(), 4u);
  EXPECT_EQ(json["histograms"].size(), 4u * 3);
  EXPECT_EQ(json["summary"]["checks"], report.check_count());
  const nlohmann::json& row = json["rows"][0];
  for (const char* key : {"d_mse_theory", "d_mse_empirical", "d_mse_rotations", "one_hot", "theorem1", "theorem2",
                          "inner_products", "checks", "ok", "centroids"}) {
    EXPECT_TRUE(row.contains(key)) << key;
  }
  ASSERT_EQ(row["one_hot"].size(), 3u);  // d = 16: haar, hadamard, hadamard2
  for (const char* key : {"rotation", "spec", "seeds", "d_mse", "d_mse_z", "d_mse_predicted",
                          "debiased_inner_product", "debiased_inner_product_z"}) {
    EXPECT_TRUE(row["one_hot"][1].contains(key)) << key;
  }
  EXPECT_TRUE(json["rows"][2]["one_hot"][0]["d_mse_predicted"].is_null());  // d = 24: Haar only, no prediction
  EXPECT_TRUE(row["inner_products"][1]["prod"].contains("predicted"));
  EXPECT_TRUE(row["checks"][0]["z"].is_null());  // theorem1.upper: exact, no z
  EXPECT_EQ(json["histograms"][0]["by_inner_product"].size(), 3u);
}

TEST(VerifyBoundsTest, TinyToleranceFailsAndNamesTheRowsAndChecks) {
  VerifyBoundsOptions options = quick_options(200);
  options.dims = {16};
  options.bits = {2};
  options.tolerance_z = 1e-4;
  const BoundsReport report = verify_bounds(options);
  EXPECT_FALSE(report.all_ok);
  const auto failures = report.failures();
  ASSERT_FALSE(failures.empty());
  EXPECT_NE(failures[0].find("dim 16, b 2: "), std::string::npos) << failures[0];
  EXPECT_NE(failures[0].find("z = "), std::string::npos) << failures[0];
  // Exact checks do not depend on the tolerance.
  for (const BoundsCheck& check : report.rows[0].checks) {
    if (std::isnan(check.z)) {
      EXPECT_TRUE(check.ok) << check.name;
    }
  }
}

TEST(VerifyBoundsTest, RejectsBadOptionsNamingThem) {
  auto with = [](auto change) {
    VerifyBoundsOptions options = quick_options();
    change(options);
    return [options] { validate_verify_bounds_options(options); };
  };
  EXPECT_TRUE(throws_input_error(with([](auto& o) { o.dims = {1}; }), {"--dims", "1", "2..4096"}));
  EXPECT_TRUE(throws_input_error(with([](auto& o) { o.dims = {}; }), {"--dims"}));
  EXPECT_TRUE(throws_input_error(with([](auto& o) { o.bits = {0, 2}; }), {"--bits", "0", "1..8"}));
  EXPECT_TRUE(throws_input_error(with([](auto& o) { o.samples = 3; }), {"--samples", "3"}));
  EXPECT_TRUE(throws_input_error(with([](auto& o) { o.rotation_samples = 5; }), {"--rotation-samples", "5"}));
  EXPECT_TRUE(throws_input_error(with([](auto& o) { o.tolerance_z = 0; }), {"--tolerance-z"}));
  EXPECT_TRUE(throws_input_error(with([](auto& o) { o.inner_products = {1.5}; }), {"1.5"}));
  EXPECT_NO_THROW(validate_verify_bounds_options(quick_options()));
}

}  // namespace
}  // namespace tqlab
