// The engine seam and the llama.cpp engine's rules, one by one (engine/engine.h,
// engine/llamacpp_*.h): spellings, the cache writers against ggml's reference blocks, the x86
// q8_0 writer's ties, the query's q8_1 conversion and the q4_1/q5_1 product, the Hadamard
// rotation, the rotation width, and the flash-attention recurrence against plain softmax.
// tests/cli/llamacpp_reference.sh holds the whole engine to llama.cpp itself.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "blocks/iq4_blocks.h"
#include "blocks/legacy_blocks.h"
#include "core/dtype.h"
#include "core/error.h"
#include "engine/engine.h"
#include "engine/llamacpp_attention.h"
#include "engine/llamacpp_cache_types.h"
#include "engine/llamacpp_engine.h"

namespace tqlab {
namespace {

std::vector<float> gaussian_rows(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& value : x) value = normal(rng);
  return x;
}

TEST(EngineSpellingTest, CanonicalNamesAndRefusals) {
  EXPECT_EQ(canonical_engine("", "--engine"), "tqlab");
  EXPECT_EQ(canonical_engine("tqlab", "--engine"), "tqlab");
  EXPECT_EQ(canonical_engine("llama.cpp", "--engine"), "llama.cpp");
  EXPECT_EQ(canonical_engine("llama.cpp:rot=off", "--engine"), "llama.cpp:rot=off");
  EXPECT_TRUE(is_default_engine(""));
  EXPECT_FALSE(is_default_engine("llama.cpp"));
  EXPECT_THROW(canonical_engine("llamacpp", "--engine"), InputError);
  EXPECT_THROW(canonical_engine("llama.cpp:rot=maybe", "--engine"), InputError);
  EXPECT_THROW(canonical_engine("llama.cpp:rot", "--engine"), InputError);
  EXPECT_THROW(canonical_engine("tqlab:rot=off", "--engine"), InputError);
}

TEST(EngineSpellingTest, PrefillRule) {
  EXPECT_EQ(parse_prefill("quantized", "--prefill"), PrefillRule{});
  EXPECT_EQ(parse_prefill("exact 64", "--prefill").exact_chunk, 64);
  EXPECT_EQ(parse_prefill("exact 64", "--prefill").spelling(), "exact 64");
  EXPECT_THROW(parse_prefill("exact 0", "--prefill"), InputError);
  EXPECT_THROW(parse_prefill("exact", "--prefill"), InputError);
  EXPECT_THROW(parse_prefill("exact -3", "--prefill"), InputError);
  // "exact 4": token 5 reads keys 4.. exact (its piece), "quantized": none.
  EXPECT_EQ(parse_prefill("exact 4", "--prefill").first_exact_key(5, 8), 4);
  EXPECT_EQ(PrefillRule{}.first_exact_key(5, 8), 6);
}

TEST(LlamaCppEngineTest, ChecksWhatItCanRun) {
  const auto engine = parse_engine("llama.cpp", "--engine");
  EngineRunRequest request;
  request.k = "q4_0";
  request.v = "f16";
  request.head_dim = 64;
  request.where = "--k/--v";
  EXPECT_NO_THROW(engine->check_run(request));
  for (const char* type : {"f32", "bf16", "q8_0", "q4_1", "q5_0", "q5_1", "iq4_nl"}) {
    request.k = type;
    EXPECT_NO_THROW(engine->check_run(request)) << type;
  }
  request.k = "tq:bits=4";
  EXPECT_THROW(engine->check_run(request), InputError);
  request.k = "q4_0";
  request.window = 16;
  EXPECT_THROW(engine->check_run(request), InputError);
  request.window = 0;
  request.head_dim = 48;  // not a multiple of the block of 32
  EXPECT_THROW(engine->check_run(request), InputError);
}

// Every block type the cache stores as ggml's CPU writer does, which is the reference
// quantizer of blocks/ for all but q8_0.
template <typename Block>
void expect_reference_blocks(const char* name, void (*quantize)(const float*, Block*, std::int64_t),
                             void (*dequantize)(const Block*, float*, std::int64_t)) {
  const int rows = 3, dim = 64;
  const std::vector<float> x = gaussian_rows(rows * dim, 7);
  StoredRows stored;
  store_rows(*find_llamacpp_cache_type(name), rows, dim, x.data(), stored);
  std::vector<Block> blocks(x.size() / kQuantBlockSize);
  quantize(x.data(), blocks.data(), static_cast<std::int64_t>(x.size()));
  std::vector<float> expected(x.size());
  dequantize(blocks.data(), expected.data(), static_cast<std::int64_t>(x.size()));
  ASSERT_EQ(stored.values.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(stored.values[i], expected[i]) << name << " " << i;
  if constexpr (requires { blocks[0].min_fp16; }) {
    ASSERT_EQ(stored.minimums.size(), blocks.size());
    for (std::size_t b = 0; b < blocks.size(); ++b) EXPECT_EQ(stored.minimums[b], half_to_float(blocks[b].min_fp16));
  } else {
    EXPECT_TRUE(stored.minimums.empty()) << name;
  }
}

TEST(LlamaCppCacheTypesTest, BlockTypesAreWrittenByTheReferenceQuantizers) {
  expect_reference_blocks<BlockQ4_0>("q4_0", quantize_row_q4_0, dequantize_row_q4_0);
  expect_reference_blocks<BlockQ4_1>("q4_1", quantize_row_q4_1, dequantize_row_q4_1);
  expect_reference_blocks<BlockQ5_0>("q5_0", quantize_row_q5_0, dequantize_row_q5_0);
  expect_reference_blocks<BlockQ5_1>("q5_1", quantize_row_q5_1, dequantize_row_q5_1);
  expect_reference_blocks<BlockIq4Nl>("iq4_nl", quantize_row_iq4_nl, dequantize_row_iq4_nl);
}

TEST(LlamaCppCacheTypesTest, FloatSpellingsAndTable) {
  EXPECT_EQ(find_llamacpp_cache_type("fp16"), find_llamacpp_cache_type("f16"));
  EXPECT_EQ(find_llamacpp_cache_type("fp32"), find_llamacpp_cache_type("f32"));
  EXPECT_EQ(find_llamacpp_cache_type("q2_k"), nullptr);
  EXPECT_EQ(find_llamacpp_cache_type("q5_1")->query, QueryType::q8_1);
  EXPECT_EQ(find_llamacpp_cache_type("iq4_nl")->query, QueryType::q8_0);
  EXPECT_EQ(llamacpp_cache_type_names().size(), 9u);
}

TEST(LlamaCppCacheTypesTest, X86Q8WriterRoundsTiesToEvenUnlikeTheReference) {
  // amax 127: d = 1, so x * (127 / amax) = x and the ties are exact.
  std::vector<float> x(kQuantBlockSize, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -3.5f;
  x[3] = 0.5f;
  StoredRows stored;
  store_rows(*find_llamacpp_cache_type("q8_0"), 1, kQuantBlockSize, x.data(), stored);
  EXPECT_EQ(stored.values[1], 2.0f);
  EXPECT_EQ(stored.values[2], -4.0f);
  EXPECT_EQ(stored.values[3], 0.0f);
  BlockQ8_0 reference{};
  quantize_row_q8_0(x.data(), &reference, kQuantBlockSize);
  EXPECT_EQ(reference.codes[1], 3);  // half away from zero
  EXPECT_EQ(reference.codes[3], 1);
}

TEST(LlamaCppCacheTypesTest, Q4_1KeyTimesQ8_1QueryIsTheIntegerProduct) {
  // ggml_vec_dot_q4_1_q8_1: per block d_k d_q sum(qk qq) + m_k s_q with s_q = fp16(d_q sum(qq)).
  const int dim = 64;
  const std::vector<float> key = gaussian_rows(dim, 3);
  const std::vector<float> query = gaussian_rows(dim, 4);
  StoredRows stored;
  store_rows(*find_llamacpp_cache_type("q4_1"), 1, dim, key.data(), stored);
  ConvertedQuery converted;
  convert_query(QueryType::q8_1, dim, query.data(), converted);
  ASSERT_EQ(converted.sum_correction.size(), 2u);

  BlockQ4_1 k_blocks[2];
  quantize_row_q4_1(key.data(), k_blocks, dim);
  double expected = 0.0;
  for (int b = 0; b < 2; ++b) {
    const float* q = query.data() + b * kQuantBlockSize;
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlockSize; ++j) amax = std::fmax(amax, std::fabs(q[j]));
    const float d = amax / 127.0f;
    int dot = 0, sum = 0;
    for (int j = 0; j < kQuantBlockSize; ++j) {
      const int qq = static_cast<int>(std::nearbyint(q[j] * (127.0f / amax)));
      const std::uint8_t byte = k_blocks[b].nibbles[j % 16];
      const int qk = j < 16 ? (byte & 0x0F) : (byte >> 4);
      dot += qk * qq;
      sum += qq;
    }
    const double dk = half_to_float(k_blocks[b].scale_fp16), mk = half_to_float(k_blocks[b].min_fp16);
    const double dq = half_to_float(float_to_half(d));
    const double s = half_to_float(float_to_half(d * static_cast<float>(sum)));
    expected += dk * dq * dot + mk * s;
  }
  const float got = key_query_dot(dim, stored.values.data(), stored.minimums.data(), converted);
  EXPECT_NEAR(got, expected, 1e-5 * std::fabs(expected) + 1e-6);
}

TEST(LlamaCppEngineTest, HadamardIsOrthonormalAndItsOwnInverse) {
  const int n = 64;
  std::vector<float> x = gaussian_rows(2 * n, 11);
  const std::vector<float> original = x;
  double norm = 0.0, sum = 0.0;
  for (int i = 0; i < n; ++i) {
    norm += double(x[i]) * x[i];
    sum += x[i];
  }
  llamacpp_hadamard_blocks(n, x.size(), x.data());
  double rotated_norm = 0.0;
  for (int i = 0; i < n; ++i) rotated_norm += double(x[i]) * x[i];
  EXPECT_NEAR(rotated_norm, norm, 1e-4 * norm);
  EXPECT_NEAR(x[0], sum / std::sqrt(double(n)), 1e-5);  // row 0 of H is all ones
  llamacpp_hadamard_blocks(n, x.size(), x.data());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], original[i], 1e-5);
}

TEST(LlamaCppEngineTest, KeyRotationWidth) {
  EXPECT_EQ(llamacpp_key_rotation_width(64), 64);
  EXPECT_EQ(llamacpp_key_rotation_width(128), 128);
  EXPECT_EQ(llamacpp_key_rotation_width(192), 64);
  EXPECT_EQ(llamacpp_key_rotation_width(256), 256);
  EXPECT_EQ(llamacpp_key_rotation_width(80), 0);
  EXPECT_EQ(llamacpp_key_rotation_width(32), 0);
}

TEST(LlamaCppAttentionTest, F32RecurrenceEqualsSoftmaxAttention) {
  const int tokens = 5, dim = 32;
  const std::vector<float> q = gaussian_rows(tokens * dim, 21);
  const std::vector<float> k = gaussian_rows(tokens * dim, 22);
  const std::vector<float> v = gaussian_rows(tokens * dim, 23);
  FlashAttentionHead head;
  head.tokens = tokens;
  head.dim = dim;
  head.scale = 1.0f / std::sqrt(float(dim));
  head.q = q.data();
  head.k_cache = head.k_exact = k.data();
  head.v_cache = head.v_exact = v.data();
  std::vector<float> out(tokens * dim);
  flash_attention_head(head, out.data());
  for (int t = 0; t < tokens; ++t) {
    std::vector<double> w(t + 1);
    double m = -INFINITY, z = 0.0;
    for (int j = 0; j <= t; ++j) {
      double s = 0.0;
      for (int i = 0; i < dim; ++i) s += double(q[t * dim + i]) * k[j * dim + i];
      w[j] = s * head.scale;
      m = std::max(m, w[j]);
    }
    for (double& value : w) z += value = std::exp(value - m);
    for (int i = 0; i < dim; ++i) {
      double o = 0.0;
      for (int j = 0; j <= t; ++j) o += w[j] / z * v[j * dim + i];
      EXPECT_NEAR(out[t * dim + i], o, 1e-5) << t << " " << i;
    }
  }
}

TEST(LlamaCppEngineTest, RotationOffLeavesAnF32CacheExact) {
  // f32 K and V, any rotation: the engine's attention is plain causal attention (channel order and
  // an unquantized type change nothing), so a bound engine equals tqlab's exact path.
  const int tokens = 4, heads = 2, dim = 64;
  const std::vector<float> q = gaussian_rows(tokens * heads * dim, 31);
  const std::vector<float> k = gaussian_rows(tokens * dim, 32);
  const std::vector<float> v = gaussian_rows(tokens * dim, 33);
  EngineAttentionInput input;
  input.tokens = tokens;
  input.q_heads = heads;
  input.kv_heads = 1;
  input.head_dim = dim;
  input.scale = 0.125f;
  input.q = q.data();
  input.q_stride = heads * dim;
  input.k = k.data();
  input.v = v.data();
  input.kv_stride = dim;
  std::uint64_t key_bytes = 0, value_bytes = 0;
  std::vector<float> rotated(q.size()), plain(q.size());
  parse_engine("llama.cpp", "--engine")->bind("f32", "f32", dim)->attend(input, rotated.data(), key_bytes,
                                                                          value_bytes);
  parse_engine("llama.cpp:rot=off", "--engine")->bind("f32", "f32", dim)->attend(input, plain.data(), key_bytes,
                                                                                  value_bytes);
  for (std::size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(rotated[i], plain[i], 1e-6);
  EXPECT_EQ(key_bytes, 2u * tokens * dim * 4);
  EXPECT_EQ(value_bytes, 2u * tokens * dim * 4);
}

TEST(LlamaCppEngineTest, RotationChangesAQuantizedCacheAndTheBytes) {
  const int tokens = 4, dim = 64;
  const std::vector<float> q = gaussian_rows(tokens * dim, 41);
  const std::vector<float> k = gaussian_rows(tokens * dim, 42);
  const std::vector<float> v = gaussian_rows(tokens * dim, 43);
  EngineAttentionInput input;
  input.tokens = tokens;
  input.q_heads = input.kv_heads = 1;
  input.head_dim = dim;
  input.scale = 0.125f;
  input.q = q.data();
  input.q_stride = input.kv_stride = dim;
  input.k = k.data();
  input.v = v.data();
  std::uint64_t key_bytes = 0, value_bytes = 0;
  std::vector<float> rotated(q.size()), plain(q.size());
  parse_engine("llama.cpp", "--engine")->bind("q4_0", "q4_0", dim)->attend(input, rotated.data(), key_bytes,
                                                                            value_bytes);
  EXPECT_EQ(key_bytes, tokens * dim / 32 * 18u);
  parse_engine("llama.cpp:rot=off", "--engine")->bind("q4_0", "q4_0", dim)->attend(input, plain.data(), key_bytes,
                                                                                    value_bytes);
  double differ = 0.0;
  for (std::size_t i = 0; i < q.size(); ++i) differ = std::max(differ, double(std::fabs(rotated[i] - plain[i])));
  EXPECT_GT(differ, 1e-4);
}

}  // namespace
}  // namespace tqlab
