// The KV-dump view: layouts, layer discovery, slabs, and the K/V/Q agreement rules.
#include <cmath>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kv/kv_dump.h"
#include "test_tensors.h"

namespace tqlab {
namespace {

using testing::add_f32_tensor;
using testing::add_raw_tensor;
using testing::bytes_of;
using testing::iota_values;

TEST(KvLayoutTest, ParsesAxesInAnyOrder) {
  const KvLayout a = parse_kv_layout("seq head token dim");
  EXPECT_EQ(a.rank, 4);
  EXPECT_EQ(a.seq_axis, 0);
  EXPECT_EQ(a.dim_axis, 3);
  const KvLayout b = parse_kv_layout("token head dim");
  EXPECT_EQ(b.rank, 3);
  EXPECT_EQ(b.seq_axis, -1);
  EXPECT_EQ(b.token_axis, 0);
  EXPECT_EQ(b.head_axis, 1);
  EXPECT_EQ(parse_kv_layout("batch head token dim").seq_axis, 0);
}

TEST(KvLayoutTest, RejectsBadLayouts) {
  EXPECT_THROW(parse_kv_layout("head token"), InputError);
  EXPECT_THROW(parse_kv_layout("head head token dim"), InputError);
  EXPECT_THROW(parse_kv_layout("head token dim channel"), InputError);
  EXPECT_THROW(parse_kv_layout(""), InputError);
}

TEST(KvDumpTest, FindsLayersFromNames) {
  TensorFile file("mem", "test");
  for (const char* name : {"layers.0.k", "layers.10.k", "layers.2.k", "layers.01.k", "layers.x.k", "layers.3.v"}) {
    add_f32_tensor(file, name, {1}, {0.0f});
  }
  EXPECT_EQ(find_template_layers(file, "layers.{layer}.k"), (std::vector<int>{0, 2, 10}));
  EXPECT_THROW(find_template_layers(file, "layers.k"), InputError);
  EXPECT_EQ(layer_tensor_name("model.{layer}.attn.k", 7), "model.7.attn.k");
}

TEST(KvDumpTest, ReadsSlabsOfAnyLayout) {
  // Stored as token head dim: 3 tokens, 2 heads, dim 4. Element (t, h, c) = 100t + 10h + c.
  std::vector<float> keys;
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < 2; ++h)
      for (int c = 0; c < 4; ++c) keys.push_back(static_cast<float>(100 * t + 10 * h + c));
  TensorFile file("mem", "test");
  add_f32_tensor(file, "l.0.k", {3, 2, 4}, keys);
  add_f32_tensor(file, "l.0.v", {3, 2, 2}, iota_values(12));
  KvDumpSpec spec{"l.{layer}.k", "l.{layer}.v", "", false, "token head dim", std::nullopt};
  const KvDump dump(file, spec);
  ASSERT_EQ(dump.layers().size(), 1u);
  const KvLayerShape& shape = dump.layers()[0];
  EXPECT_EQ(shape.tokens, 3);
  EXPECT_EQ(shape.kv_heads, 2);
  EXPECT_EQ(shape.key_dim, 4);
  EXPECT_EQ(shape.value_dim, 2);  // K and V head dims may differ (MLA)
  EXPECT_FALSE(dump.has_queries());
  std::vector<float> slab(12);
  dump.read_keys(0, 0, 1, slab.data());
  for (int t = 0; t < 3; ++t)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(slab[t * 4 + c], 100 * t + 10 + c);
}

TEST(KvDumpTest, ReadsSequencesAndGroupedQueries) {
  // seq head token dim: 2 seqs, 2 kv heads, 3 tokens, dim 2; 4 query heads.
  TensorFile file("mem", "test");
  add_f32_tensor(file, "layers.0.k", {2, 2, 3, 2}, iota_values(24));
  add_f32_tensor(file, "layers.0.v", {2, 2, 3, 2}, iota_values(24, 1000));
  add_f32_tensor(file, "layers.0.q", {2, 4, 3, 2}, iota_values(48, 5000));
  KvDumpSpec spec;
  spec.layout = "seq head token dim";
  const KvDump dump(file, spec);
  EXPECT_TRUE(dump.has_queries());
  EXPECT_EQ(dump.layers()[0].q_heads, 4);
  EXPECT_EQ(dump.layers()[0].seqs, 2);
  std::vector<float> slab(6);
  dump.read_values(0, 1, 0, slab.data());
  EXPECT_EQ(slab[0], 1000 + 12);
  dump.read_queries(0, 1, 3, slab.data());
  EXPECT_EQ(slab[5], 5000 + 24 + 18 + 5);
}

TEST(KvDumpTest, RejectsDisagreeingTensors) {
  KvDumpSpec spec;
  spec.layout = "head token dim";
  {
    TensorFile file("dump.safetensors", "test");
    add_f32_tensor(file, "layers.0.k", {2, 3, 4}, iota_values(24));
    add_f32_tensor(file, "layers.0.v", {2, 5, 4}, iota_values(40));
    try {
      KvDump dump(file, spec);
      FAIL() << "tokens disagree";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("dump.safetensors"), std::string::npos);
      EXPECT_NE(std::string(error.what()).find("layers.0.v"), std::string::npos);
    }
  }
  {
    TensorFile file("mem", "test");  // 3 query heads over 2 kv heads
    add_f32_tensor(file, "layers.0.k", {2, 3, 4}, iota_values(24));
    add_f32_tensor(file, "layers.0.v", {2, 3, 4}, iota_values(24));
    add_f32_tensor(file, "layers.0.q", {3, 3, 4}, iota_values(36));
    EXPECT_THROW(KvDump(file, spec), InputError);
  }
  {
    TensorFile file("mem", "test");  // query dim differs from key dim
    add_f32_tensor(file, "layers.0.k", {2, 3, 4}, iota_values(24));
    add_f32_tensor(file, "layers.0.v", {2, 3, 4}, iota_values(24));
    add_f32_tensor(file, "layers.0.q", {2, 3, 2}, iota_values(12));
    EXPECT_THROW(KvDump(file, spec), InputError);
  }
  {
    TensorFile file("mem", "test");  // rank does not match the layout
    add_f32_tensor(file, "layers.0.k", {1, 2, 3, 4}, iota_values(24));
    add_f32_tensor(file, "layers.0.v", {1, 2, 3, 4}, iota_values(24));
    EXPECT_THROW(KvDump(file, spec), InputError);
  }
  {
    TensorFile file("mem", "test");  // missing values, missing layer
    add_f32_tensor(file, "layers.0.k", {2, 3, 4}, iota_values(24));
    EXPECT_THROW(KvDump(file, spec), InputError);
    KvDumpSpec only_layer_5 = spec;
    only_layer_5.layers = std::vector<int>{5};
    EXPECT_THROW(KvDump(file, only_layer_5), InputError);
  }
}

TEST(KvDumpTest, LayerHeadDimsMayDifferBetweenLayers) {
  TensorFile file("mem", "test");
  add_f32_tensor(file, "layers.0.k", {1, 2, 192}, iota_values(384));
  add_f32_tensor(file, "layers.0.v", {1, 2, 128}, iota_values(256));
  add_f32_tensor(file, "layers.1.k", {1, 2, 64}, iota_values(128));
  add_f32_tensor(file, "layers.1.v", {1, 2, 64}, iota_values(128));
  const KvDump dump(file, KvDumpSpec{});
  ASSERT_EQ(dump.layers().size(), 2u);
  EXPECT_EQ(dump.layers()[0].key_dim, 192);
  EXPECT_EQ(dump.layers()[0].value_dim, 128);
  EXPECT_EQ(dump.layers()[1].key_dim, 64);
}

// Only float tensors are keys, values or queries: a template that names token ids (or any
// integer, bool or raw tensor) is refused naming the tensor, the template and its dtype.
TEST(KvDumpTest, KeysValuesAndQueriesMustBeFloats) {
  KvDumpSpec spec;
  spec.layout = "head token dim";
  const std::vector<std::byte> ids = bytes_of(std::vector<std::int32_t>(24, 7));
  const auto message = [&](const TensorFile& file) {
    try {
      KvDump dump(file, spec);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  {
    TensorFile file("dump.safetensors", "safetensors");
    add_raw_tensor(file, "layers.0.k", DType::i32, {2, 3, 4}, ids);
    add_f32_tensor(file, "layers.0.v", {2, 3, 4}, iota_values(24));
    EXPECT_EQ(message(file), "'dump.safetensors': tensor 'layers.0.k' (template 'layers.{layer}.k') is i32, but keys, "
                             "values and queries must be floats: f8_e4m3, f8_e5m2, f16, bf16, f32, f64");
  }
  {
    TensorFile file("dump.npz", "npz");  // '<u2' in an .npz: perhaps bfloat16 bits
    add_f32_tensor(file, "layers.0.k", {2, 3, 4}, iota_values(24));
    add_f32_tensor(file, "layers.0.v", {2, 3, 4}, iota_values(24));
    add_raw_tensor(file, "layers.0.q", DType::u16, {2, 3, 4}, std::vector<std::byte>(48));
    EXPECT_NE(message(file).find("tensor 'layers.0.q' (template 'layers.{layer}.q') is u16"), std::string::npos)
        << message(file);
    EXPECT_NE(message(file).find("--bf16"), std::string::npos) << message(file);
  }
  {
    TensorFile file("dump.safetensors", "safetensors");
    add_f32_tensor(file, "layers.0.k", {2, 3, 4}, iota_values(24));
    add_raw_tensor(file, "layers.0.v", DType::boolean, {2, 3, 4}, std::vector<std::byte>(24));
    EXPECT_NE(message(file).find("'layers.0.v' (template 'layers.{layer}.v') is bool"), std::string::npos)
        << message(file);
  }
}

// fp8 caches are real: fp8 keys and values are read, exactly, like any other float.
TEST(KvDumpTest, Fp8KeysAndValuesReadExactly) {
  TensorFile file("mem", "test");
  // e4m3 1, 2, -0.5, 448; e5m2 1, -2, 2^-16, 57344.
  add_raw_tensor(file, "layers.0.k", DType::f8_e4m3, {1, 2, 2},
                 bytes_of(std::vector<std::uint8_t>{0x38, 0x40, 0xB0, 0x7E}));
  add_raw_tensor(file, "layers.0.v", DType::f8_e5m2, {1, 2, 2},
                 bytes_of(std::vector<std::uint8_t>{0x3C, 0xC0, 0x01, 0x7B}));
  const KvDump dump(file, KvDumpSpec{});
  std::vector<float> keys(4), values(4);
  dump.read_keys(0, 0, 0, keys.data());
  dump.read_values(0, 0, 0, values.data());
  EXPECT_EQ(keys, (std::vector<float>{1.0f, 2.0f, -0.5f, 448.0f}));
  EXPECT_EQ(values, (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -16), 57344.0f}));
}

}  // namespace
}  // namespace tqlab
