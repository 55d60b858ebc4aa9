// Tensor statistics and K/V pair recognition used by `tqlab inspect`.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "io/tensor_stats.h"
#include "test_tensors.h"

namespace tqlab {
namespace {

using testing::add_f32_tensor;
using testing::add_raw_tensor;
using testing::bytes_of;

// i64 extremes and 2^53 + 1, which a double cannot hold: min and max stay exact, the mean
// comes from the exact sum (here 2^53 + 1 - 1 = 2^53 over 4 values = 2^51).
TEST(TensorStatsTest, SixtyFourBitIntegersAreSummarizedExactly) {
  TensorFile file("mem", "test");
  const std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  const std::int64_t highest = std::numeric_limits<std::int64_t>::max();
  const std::int64_t beyond_double = (std::int64_t{1} << 53) + 1;
  add_raw_tensor(file, "ids", DType::i64, {2, 2},
                 bytes_of(std::vector<std::int64_t>{lowest, highest, beyond_double, 0}));
  const TensorStats stats = compute_tensor_stats(file.get("ids"));
  ASSERT_TRUE(stats.integer.has_value());
  EXPECT_FALSE(stats.integer->is_unsigned);
  EXPECT_EQ(stats.integer->signed_min, lowest);
  EXPECT_EQ(stats.integer->signed_max, highest);
  EXPECT_EQ(stats.integer->min_text(), "-9223372036854775808");
  EXPECT_EQ(stats.integer->max_text(), "9223372036854775807");
  EXPECT_EQ(stats.count, 4);
  EXPECT_EQ(stats.nonfinite, 0);
  // lowest + highest = -1; + 2^53 + 1 = 2^53: the mean is exactly 2^51.
  EXPECT_EQ(stats.mean, std::ldexp(1.0, 51));

  // u64: the largest value, and a sum beyond 2^64 whose mean a 64-bit sum would wrap.
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  add_raw_tensor(file, "hashes", DType::u64, {3}, bytes_of(std::vector<std::uint64_t>{top, top, 1}));
  const TensorStats hashes = compute_tensor_stats(file.get("hashes"));
  ASSERT_TRUE(hashes.integer.has_value());
  EXPECT_TRUE(hashes.integer->is_unsigned);
  EXPECT_EQ(hashes.integer->max_text(), "18446744073709551615");
  EXPECT_EQ(hashes.integer->min_text(), "1");
  // (2 * (2^64 - 1) + 1) / 3 = (2^65 - 1) / 3, exactly 12297829382473034411 (the double nearest).
  EXPECT_EQ(hashes.mean, 12297829382473034411.0);
}

// Bytes stored big-endian or in Fortran order, bools as 0/1 (any non-zero byte true), and
// every integer width: statistics from the values, not from the bytes' order.
TEST(TensorStatsTest, SmallIntegersBoolsAndByteOrders) {
  TensorFile file("mem", "test");
  add_raw_tensor(file, "mask", DType::boolean, {4}, bytes_of(std::vector<std::uint8_t>{0, 1, 7, 1}));
  const TensorStats mask = compute_tensor_stats(file.get("mask"));
  EXPECT_EQ(mask.integer->min_text(), "0");
  EXPECT_EQ(mask.integer->max_text(), "1");
  EXPECT_DOUBLE_EQ(mask.mean, 0.75);
  EXPECT_DOUBLE_EQ(mask.rms, std::sqrt(0.75));

  // -2 and 300 as big-endian int16: ff fe, 01 2c.
  add_raw_tensor(file, "be", DType::i16, {2},
                 {std::byte{0xff}, std::byte{0xfe}, std::byte{0x01}, std::byte{0x2c}}, true);
  const TensorStats be = compute_tensor_stats(file.get("be"));
  EXPECT_EQ(be.integer->min_text(), "-2");
  EXPECT_EQ(be.integer->max_text(), "300");
  EXPECT_DOUBLE_EQ(be.mean, 149.0);
  EXPECT_DOUBLE_EQ(be.rms, std::sqrt((4.0 + 90000.0) / 2));

  // A Fortran-order i8 tensor [[-128, 5], [127, 0]] stored column by column.
  add_raw_tensor(file, "fortran", DType::i8, {2, 2}, bytes_of(std::vector<std::int8_t>{-128, 127, 5, 0}), false,
                 {1, 2});
  const TensorStats fortran = compute_tensor_stats(file.get("fortran"));
  EXPECT_EQ(fortran.integer->min_text(), "-128");
  EXPECT_EQ(fortran.integer->max_text(), "127");
  EXPECT_DOUBLE_EQ(fortran.mean, 1.0);

  add_raw_tensor(file, "u32", DType::u32, {2}, bytes_of(std::vector<std::uint32_t>{4294967295u, 1}));
  EXPECT_DOUBLE_EQ(compute_tensor_stats(file.get("u32")).mean, 2147483648.0);
  add_raw_tensor(file, "none", DType::i32, {0, 3}, {});
  const TensorStats none = compute_tensor_stats(file.get("none"));
  EXPECT_EQ(none.count, 0);
  EXPECT_FALSE(none.integer.has_value());
}

// fp8 tensors are float tensors: decoded exactly, NaN codes counted as non-finite.
TEST(TensorStatsTest, Fp8TensorsAreFloats) {
  TensorFile file("mem", "test");
  // e4m3: 1, 448, -448, NaN (0x7F).
  add_raw_tensor(file, "k", DType::f8_e4m3, {4}, bytes_of(std::vector<std::uint8_t>{0x38, 0x7E, 0xFE, 0x7F}));
  const TensorStats stats = compute_tensor_stats(file.get("k"));
  EXPECT_FALSE(stats.integer.has_value());
  EXPECT_EQ(stats.nonfinite, 1);
  EXPECT_EQ(stats.min, -448.0);
  EXPECT_EQ(stats.max, 448.0);
  EXPECT_DOUBLE_EQ(stats.mean, 1.0 / 3.0);
}

// Token ids named like keys are not keys: K/V recognition takes float tensors only.
TEST(TensorStatsTest, IntegerTensorsAreNeverKvPairs) {
  TensorFile file("mem", "test");
  add_raw_tensor(file, "ids.k", DType::i64, {2}, bytes_of(std::vector<std::int64_t>{1, 2}));
  add_f32_tensor(file, "ids.v", {2}, {1, 2});
  add_f32_tensor(file, "layer.1.k", {2}, {1, 2});
  add_raw_tensor(file, "layer.1.v", DType::i32, {2}, bytes_of(std::vector<std::int32_t>{1, 2}));
  EXPECT_TRUE(find_kv_tensor_names(file).empty());
}

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
  for (const char* name :
       {"layers.1.k", "layers.1.v", "layers.1.q", "layers.0.k", "layers.0.v", "model.layers.2.self_attn.k_proj",
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
