// The forward pass's fast pieces against their plain-loop references, and the
// mathematics they must have: RoPE (transformers' frequencies, rotate-half,
// norms and relative positions), linear layers over F32/F16/BF16 weights,
// causal attention with and without a recent exact window.
#include <cmath>
#include <numbers>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "io/tensor_file.h"
#include "model/attention.h"
#include "model/linear.h"
#include "model/matmul.h"
#include "model/weight_matrix.h"
#include "model/rope.h"
#include "model_test_util.h"

namespace tqlab {
namespace {

std::vector<float> gaussian_values(std::size_t count, std::uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> values(count);
  for (float& value : values) value = static_cast<float>(scale * rng.gaussian());
  return values;
}

// max |a - b| / max |b|: the error measure of every comparison here.
using testing::relative_max_error;

TEST(RopeTest, DefaultFrequenciesAreThetaPowers) {
  const std::vector<float> inv = rope_inverse_frequencies(RopeConfig{}, 64);
  ASSERT_EQ(inv.size(), 32u);
  EXPECT_EQ(inv[0], 1.0f);
  EXPECT_FLOAT_EQ(inv[16], 0.01f);  // 10000^(-32/64)
  for (int i = 0; i < 32; ++i)
    EXPECT_NEAR(inv[static_cast<std::size_t>(i)], std::pow(10000.0, -i / 32.0),
                1e-7 * std::pow(10000.0, -i / 32.0) + 1e-12);
}

TEST(RopeTest, LinearScalingDividesEveryFrequency) {
  RopeConfig linear;
  linear.scaling = RopeConfig::Scaling::linear;
  linear.factor = 4;
  const std::vector<float> plain = rope_inverse_frequencies(RopeConfig{}, 32);
  const std::vector<float> scaled = rope_inverse_frequencies(linear, 32);
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_FLOAT_EQ(scaled[i], plain[i] / 4);
}

// Llama 3.1's published setting: theta 500000, factor 8, low 1, high 4, trained at 8192.
TEST(RopeTest, Llama3ScalingKeepsHighDividesLowAndBlendsBetween) {
  RopeConfig rope;
  rope.theta = 500000;
  rope.scaling = RopeConfig::Scaling::llama3;
  rope.factor = 8;
  rope.low_freq_factor = 1;
  rope.high_freq_factor = 4;
  rope.original_max_position_embeddings = 8192;
  const std::vector<float> scaled = rope_inverse_frequencies(rope, 128);
  for (int i = 0; i < 64; ++i) {
    const double inv = std::pow(500000.0, -i / 64.0);
    const double wavelen = 2 * std::numbers::pi / inv;
    double expected = inv;
    if (wavelen > 8192) {
      expected = inv / 8;
    } else if (wavelen >= 2048) {
      const double smooth = (8192 / wavelen - 1) / (4 - 1);
      expected = (1 - smooth) * inv / 8 + smooth * inv;
    }
    EXPECT_NEAR(scaled[static_cast<std::size_t>(i)], expected, 1e-6 * expected) << "frequency " << i;
  }
  EXPECT_EQ(scaled[0], 1.0f);                                          // wavelength 2 pi: untouched
  EXPECT_NEAR(scaled[63], std::pow(500000.0, -63 / 64.0) / 8, 1e-12);  // the lowest: divided by 8
}

TEST(RopeTest, TableAnglesAreFloatProductsAsTransformersRoundsThem) {
  const RopeTable table = make_rope_table(RopeConfig{}, 64, 2048);
  const std::vector<float> inv = rope_inverse_frequencies(RopeConfig{}, 64);
  for (int t : {0, 1, 777, 2047}) {
    for (int i : {0, 5, 31}) {
      const float angle = static_cast<float>(t) * inv[static_cast<std::size_t>(i)];
      EXPECT_EQ(table.cos[static_cast<std::size_t>(t * 32 + i)],
                static_cast<float>(std::cos(static_cast<double>(angle))));
      EXPECT_EQ(table.sin[static_cast<std::size_t>(t * 32 + i)],
                static_cast<float>(std::sin(static_cast<double>(angle))));
    }
  }
}

TEST(RopeTest, MatchesReferenceRotatesHalvesAndKeepsPairNorms) {
  const int tokens = 40, heads = 3, dim = 64;
  const std::int64_t stride = heads * dim + 5;  // rows wider than the heads: the stride is honoured
  std::vector<float> x = gaussian_values(static_cast<std::size_t>(tokens * stride), 7);
  std::vector<float> fast = x, reference = x;
  const RopeTable table = make_rope_table(RopeConfig{}, dim, tokens);
  apply_rope(table, tokens, heads, dim, stride, fast.data());
  apply_rope_reference(rope_inverse_frequencies(RopeConfig{}, dim), tokens, heads, dim, stride, reference.data());
  EXPECT_LT(relative_max_error(fast, reference), 1e-6);
  for (int t = 0; t < tokens; ++t) {
    for (int c = heads * dim; c < stride; ++c)
      EXPECT_EQ(fast[static_cast<std::size_t>(t * stride + c)], x[static_cast<std::size_t>(t * stride + c)]);
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < dim / 2; ++i) {
        const std::size_t a = static_cast<std::size_t>(t * stride + h * dim + i),
                          b = a + dim / 2;  // channel i pairs with i + d/2
        EXPECT_NEAR(std::hypot(fast[a], fast[b]), std::hypot(x[a], x[b]), 1e-5);
      }
    }
  }
  // Position 0 is the identity.
  for (int c = 0; c < heads * dim; ++c) EXPECT_EQ(fast[static_cast<std::size_t>(c)], x[static_cast<std::size_t>(c)]);
}

TEST(RopeTest, DotProductsDependOnlyOnRelativePosition) {
  const int dim = 32, tokens = 200;
  const std::vector<float> q0 = gaussian_values(dim, 1), k0 = gaussian_values(dim, 2);
  const RopeTable table = make_rope_table(RopeConfig{}, dim, tokens);
  const auto rotated_at = [&](const std::vector<float>& v, int position) {
    std::vector<float> rows(static_cast<std::size_t>(tokens * dim), 0.0f);
    std::copy(v.begin(), v.end(), rows.begin() + position * dim);
    apply_rope(table, tokens, 1, dim, dim, rows.data());
    return std::vector<float>(rows.begin() + position * dim, rows.begin() + (position + 1) * dim);
  };
  const auto dot = [](const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
    return sum;
  };
  const double near = dot(rotated_at(q0, 10), rotated_at(k0, 3));
  const double far = dot(rotated_at(q0, 150), rotated_at(k0, 143));
  EXPECT_NEAR(near, far, 1e-4 * std::abs(near) + 1e-4);
  EXPECT_GT(std::abs(near - dot(rotated_at(q0, 10), rotated_at(k0, 4))), 1e-3);  // and it does depend on it
}

TEST(MatmulTest, SgemmMatchesTheReference) {
  const int m = 37, n = 53, k = 70;
  const std::vector<float> a = gaussian_values(static_cast<std::size_t>(m * (k + 3)), 3);
  const std::vector<float> b = gaussian_values(static_cast<std::size_t>(n * k), 4);
  const std::vector<float> bnn = gaussian_values(static_cast<std::size_t>(k * n), 5);
  std::vector<float> c = gaussian_values(static_cast<std::size_t>(m * n), 6), c_ref = c;
  matmul_nt(m, n, k, 0.5f, a.data(), k + 3, b.data(), k, 1.0f, c.data(), n);
  matmul_nt_reference(m, n, k, 0.5f, a.data(), k + 3, b.data(), k, 1.0f, c_ref.data(), n);
  EXPECT_LT(relative_max_error(c, c_ref), 1e-6);
  matmul_nn(m, n, k, 1.0f, a.data(), k + 3, bnn.data(), n, 0.0f, c.data(), n);
  matmul_nn_reference(m, n, k, 1.0f, a.data(), k + 3, bnn.data(), n, 0.0f, c_ref.data(), n);
  EXPECT_LT(relative_max_error(c, c_ref), 1e-6);
}

class LinearTest : public ::testing::TestWithParam<DType> {};

TEST_P(LinearTest, BlocksOfEveryDtypeMatchTheReferenceForAnyThreadCount) {
  const int tokens = 37, in = 48, out = 2 * kLinearBlockRows + 44;  // three blocks, the last one short
  const std::vector<float> weights = gaussian_values(static_cast<std::size_t>(out * in), 11);
  std::vector<std::byte> stored = encode_floats(weights, GetParam());
  TensorView view;
  view.name = "w";
  view.dtype = GetParam();
  view.shape = {out, in};
  view.strides = c_order_strides(view.shape);
  view.data = stored.data();
  view.byte_size = stored.size();
  const auto matrix = [&](const TensorView& stored_view) {
    return WeightMatrix{stored_view.data, static_cast<std::uint32_t>(ggml_type_of(stored_view.dtype)), out, in,
                        static_cast<std::uint64_t>(in) * dtype_size(stored_view.dtype)};
  };
  const WeightMatrix w = matrix(view);
  const std::vector<float> x = gaussian_values(static_cast<std::size_t>(tokens * in), 12);
  const std::vector<float> bias = gaussian_values(static_cast<std::size_t>(out), 13);
  const std::int64_t ldy = out + 7;
  std::vector<float> reference(static_cast<std::size_t>(tokens * ldy), 0.0f), one(reference), three(reference);
  linear_reference(tokens, x.data(), w, bias.data(), reference.data(), ldy);
  Workers single(1), several(3);
  linear(tokens, x.data(), w, bias.data(), one.data(), ldy, single);
  linear(tokens, x.data(), w, bias.data(), three.data(), ldy, several);
  EXPECT_LT(relative_max_error(one, reference), 1e-6);
  EXPECT_EQ(one, three);
  // The reference reads the stored values: F16/BF16 weights are their rounded floats, not the originals.
  if (GetParam() != DType::f32) {
    std::vector<float> unrounded(reference.size(), 0.0f);
    TensorView original = view;
    const std::vector<std::byte> f32 = encode_floats(weights, DType::f32);
    original.dtype = DType::f32;
    original.data = f32.data();
    linear_reference(tokens, x.data(), matrix(original), bias.data(), unrounded.data(), ldy);
    EXPECT_GT(relative_max_error(one, unrounded), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, LinearTest, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

struct AttentionCase {
  int tokens, q_heads, kv_heads, dim;
  int recent_window;
  bool quantized_cache;
};

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, MatchesTheReferenceForAnyThreadCount) {
  const AttentionCase c = GetParam();
  const std::int64_t q_stride = c.q_heads * c.dim, kv_stride = c.kv_heads * c.dim;
  const std::vector<float> q = gaussian_values(static_cast<std::size_t>(c.tokens * q_stride), 21, 2.0);
  const std::vector<float> k = gaussian_values(static_cast<std::size_t>(c.tokens * kv_stride), 22, 2.0);
  const std::vector<float> v = gaussian_values(static_cast<std::size_t>(c.tokens * kv_stride), 23);
  std::vector<float> k_cache = k, v_cache = v;
  if (c.quantized_cache) {  // a cache far from the exact values, so that the window's choice shows
    const std::vector<float> noise = gaussian_values(k.size(), 24);
    for (std::size_t i = 0; i < k.size(); ++i) {
      k_cache[i] += noise[i];
      v_cache[i] -= noise[i];
    }
  }
  AttentionInput input;
  input.tokens = c.tokens;
  input.q_heads = c.q_heads;
  input.kv_heads = c.kv_heads;
  input.head_dim = c.dim;
  input.scale = static_cast<float>(1 / std::sqrt(static_cast<double>(c.dim)));
  input.q = q.data();
  input.q_stride = q_stride;
  input.k = k.data();
  input.v = v.data();
  input.k_cache = c.quantized_cache ? k_cache.data() : k.data();
  input.v_cache = c.quantized_cache ? v_cache.data() : v.data();
  input.kv_stride = kv_stride;
  input.recent_window = c.recent_window;
  std::vector<float> reference(q.size()), one(q.size()), several(q.size());
  causal_attention_reference(input, reference.data());
  Workers single(1), three(3);
  causal_attention(input, one.data(), single);
  causal_attention(input, several.data(), three);
  EXPECT_LT(relative_max_error(one, reference), 2e-6);
  EXPECT_EQ(one, several);
  if (c.quantized_cache && c.recent_window > 0) {
    // The window matters: reading the whole cache gives another output.
    AttentionInput no_window = input;
    no_window.recent_window = 0;
    std::vector<float> other(q.size());
    causal_attention_reference(no_window, other.data());
    EXPECT_GT(relative_max_error(other, reference), 1e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(AttentionCase{1, 2, 1, 8, 0, false}, AttentionCase{150, 4, 2, 16, 0, false},
                                           AttentionCase{150, 4, 2, 16, 0, true}, AttentionCase{150, 4, 1, 16, 7, true},
                                           AttentionCase{130, 2, 2, 32, 64, true},
                                           AttentionCase{70, 6, 3, 8, 200, true},
                                           AttentionCase{70, 4, 2, 16, 5, false}));

}  // namespace
}  // namespace tqlab
