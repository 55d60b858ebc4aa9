// Tensor statistics and K/V pair recognition used by `tqlab inspect`.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "eval/tensor_stats.h"
#include "test_tensors.h"

namespace tqlab {
namespace {

using testing::add_f32_tensor;

TEST(TensorStatsTest, CountsNonFiniteAndSkipsThem) {
  TensorFile file("mem", "test");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  add_f32_tensor(file, "x", {2, 3}, {1.0f, -3.0f, nan, 2.0f, inf, 4.0f});
  const TensorStats stats = compute_tensor_stats(file.get("x"));
  EXPECT_EQ(stats.count, 6);
  EXPECT_EQ(stats.nonfinite, 2);
  EXPECT_DOUBLE_EQ(stats.min, -3.0);
  EXPECT_DOUBLE_EQ(stats.max, 4.0);
  EXPECT_DOUBLE_EQ(stats.mean, 1.0);
  EXPECT_DOUBLE_EQ(stats.rms, std::sqrt(30.0 / 4));
}

TEST(TensorStatsTest, EmptyTensorHasZeroCount) {
  TensorFile file("mem", "test");
  add_f32_tensor(file, "empty", {0, 4}, {});
  const TensorStats stats = compute_tensor_stats(file.get("empty"));
  EXPECT_EQ(stats.count, 0);
  EXPECT_EQ(stats.nonfinite, 0);
}

TEST(TensorStatsTest, VisitsVectorsAlongAnyAxis) {
  TensorFile file("mem", "test");
  add_f32_tensor(file, "x", {2, 3}, {0, 1, 2, 10, 11, 12});
  std::vector<float> seen;
  for_each_vector(file.get("x"), 0, [&](const float* column) { seen.insert(seen.end(), column, column + 2); });
  EXPECT_EQ(seen, (std::vector<float>{0, 10, 1, 11, 2, 12}));
}

TEST(TensorStatsTest, RecognizesKvPairsByName) {
  TensorFile file("mem", "test");
  for (const char* name : {"layers.1.k", "layers.1.v", "layers.1.q", "layers.0.k", "layers.0.v", "model.layers.2.self_attn.k_proj",
                           "model.layers.2.self_attn.v_proj", "past.3.key", "past.3.value", "lonely.k", "bk", "bv"}) {
    add_f32_tensor(file, name, {1}, {1.0f});
  }
  const std::vector<KvTensorNames> pairs = find_kv_tensor_names(file);
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_EQ(pairs[0].keys, "layers.0.k");
  EXPECT_EQ(pairs[0].queries, "");
  EXPECT_EQ(pairs[1].keys, "layers.1.k");
  EXPECT_EQ(pairs[1].queries, "layers.1.q");
  EXPECT_EQ(pairs[2].values, "model.layers.2.self_attn.v_proj");
  EXPECT_EQ(pairs[3].layer, 3);
}

TEST(TensorStatsTest, MeasuresNormRatioAndOutlierChannels) {
  // 4 key vectors of dim 4 whose channel 2 is large; values of norm 0.5.
  TensorFile file("mem", "test");
  add_f32_tensor(file, "l.0.k", {4, 4}, {0, 0, 3, 4, 0, 0, -3, 4, 0, 0, 3, -4, 0, 0, -3, -4});
  add_f32_tensor(file, "l.0.v", {4, 2}, {0.5f, 0, 0, 0.5f, -0.5f, 0, 0, -0.5f});
  const KvLayerStats stats = measure_kv_layer(file, {0, "l.0.k", "l.0.v", ""}, -1, 2);
  EXPECT_DOUBLE_EQ(stats.key_norm_mean, 5.0);
  EXPECT_DOUBLE_EQ(stats.value_norm_mean, 0.5);
  EXPECT_DOUBLE_EQ(stats.norm_ratio, 10.0);
  ASSERT_EQ(stats.outlier_channels.size(), 2u);
  EXPECT_EQ(stats.outlier_channels[0].first, 3);
  EXPECT_DOUBLE_EQ(stats.outlier_channels[0].second, 4.0);
  EXPECT_EQ(stats.outlier_channels[1].first, 2);
}

// Zero tokens is a valid, empty K/V pair: every mean is 0 and no channel is an outlier
// (listing every channel at RMS 0 as an "outlier" would be a claim about no data).
TEST(TensorStatsTest, ZeroTokenLayerListsNoOutlierChannels) {
  TensorFile file("mem", "test");
  add_f32_tensor(file, "l.0.k", {2, 0, 4}, {});
  add_f32_tensor(file, "l.0.v", {2, 0, 4}, {});
  const KvLayerStats stats = measure_kv_layer(file, {0, "l.0.k", "l.0.v", ""}, -1, 3);
  EXPECT_EQ(stats.key_norm_mean, 0.0);
  EXPECT_EQ(stats.norm_ratio, 0.0);
  EXPECT_EQ(stats.median_key_channel_rms, 0.0);
  EXPECT_TRUE(stats.outlier_channels.empty());
}

// Keys that are all NaN/Inf leave no finite vector either: again no outliers, not NaN ones.
TEST(TensorStatsTest, AllNonFiniteKeysListNoOutlierChannels) {
  TensorFile file("mem", "test");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  add_f32_tensor(file, "l.0.k", {2, 2}, {nan, 1.0f, 2.0f, std::numeric_limits<float>::infinity()});
  add_f32_tensor(file, "l.0.v", {2, 2}, {1.0f, 0.0f, 0.0f, 1.0f});
  const KvLayerStats stats = measure_kv_layer(file, {0, "l.0.k", "l.0.v", ""}, -1, 2);
  EXPECT_EQ(stats.key_norm_mean, 0.0);
  EXPECT_DOUBLE_EQ(stats.value_norm_mean, 1.0);
  EXPECT_TRUE(stats.outlier_channels.empty());
}

}  // namespace
}  // namespace tqlab
