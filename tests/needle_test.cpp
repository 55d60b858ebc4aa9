// plant_needle (metrics/needle.h): the planted key moves the needle's logit to the margin, and a
// query it cannot move along gives no key rather than one of Inf (found by
// tests/cli/hostile_inputs.sh: f32 denormal queries made a -Inf key that the sweep then
// reported as non-finite input).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "metrics/needle.h"

namespace tqlab {
namespace {

TEST(PlantNeedle, MovesTheNeedleLogitToTheMargin) {
  const std::vector<float> q{1.0f, 2.0f, -1.0f, 0.5f};
  const std::vector<float> k_j{0.1f, -0.2f, 0.3f, 0.0f};
  const std::vector<double> logits{0.5, -0.3, 0.2};  // 0.5 q.k; the needle is index 1
  const PlantedNeedle planted = plant_needle(4, logits, 1, q.data(), k_j.data(), 0.5, 2.0);
  ASSERT_EQ(planted.key.size(), 4u);
  double logit = 0;
  for (int c = 0; c < 4; ++c) logit += 0.5 * q[static_cast<std::size_t>(c)] * planted.key[static_cast<std::size_t>(c)];
  EXPECT_NEAR(logit, 0.5 + 2.0, 1e-5);
  EXPECT_GT(planted.exact_weight, 0.5);
}

TEST(PlantNeedle, ZeroOrDenormalQueryPlantsNothing) {
  const std::vector<float> k_j{0.1f, -0.2f, 0.3f, 0.0f};
  const std::vector<double> logits{0.0, 0.0, 0.0};  // 1e-30 would still plant a finite key: 2e30
  for (const float tiny : {0.0f, 1e-40f, 1e-45f}) {
    const std::vector<float> q{tiny, -tiny, tiny, tiny};
    const PlantedNeedle planted = plant_needle(4, logits, 1, q.data(), k_j.data(), 0.5, 4.0);
    EXPECT_TRUE(planted.key.empty()) << tiny;
  }
}

}  // namespace
}  // namespace tqlab
