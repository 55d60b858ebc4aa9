// vLLM's KV cache formats and presets (quant/vllm_*.h), held to hand-worked
// cases: vLLM's Lloyd–Max levels against an independent re-run of its solver
// and Max's table, the packed bytes of a key, a value and fp8 vectors written
// out by hand from vLLM's store kernels, and the preset table's layer and
// prefill rules against vLLM's own examples. The registry's property tests
// cover the rest; tests/cli/vllm_reference.sh holds the formats to a numpy
// re-implementation of vLLM on the real dump.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "quant/registry.h"
#include "quant/rotation.h"
#include "quant/vllm_codebook.h"
#include "quant/vllm_presets.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::input_error_message;

const QuantContext kContext{7, Role::key, 2, 1};

EncodedTensor encode(const std::string& spec, int dim, const std::vector<float>& x) {
  return make_quantizer(spec)->encode(static_cast<std::int64_t>(x.size()) / dim, dim, x.data(), kContext);
}

std::vector<float> decode(const std::string& spec, const EncodedTensor& encoded) {
  std::vector<float> out(static_cast<std::size_t>(encoded.tokens * encoded.dim));
  make_quantizer(spec)->decode(encoded, kContext, out.data());
  return out;
}

// ---------------------------------------------------------------- codebook

// The levels times sqrt(d), as a Python re-run of vLLM's solve_lloyd_max (centroids.py, its
// arithmetic in double, float32 at the end) printed them at d = 64 and d = 128; the 4-bit solve
// hits the 200-round cap, so its levels are vLLM's, not the converged ones.
TEST(VllmCodebook, LevelsMatchARerunOfVllmsSolver) {
  const double three_bit[] = {0.2449836, 0.7556455, 1.3431801, 2.1503496};
  const double four_bit[] = {0.12842765, 0.3881378, 0.6568799, 0.94244826, 1.2562575, 1.6178818, 2.068447, 2.7309222};
  for (int d : {64, 128}) {
    const VllmCodebook three = solve_vllm_codebook(d, 3);
    const VllmCodebook four = solve_vllm_codebook(d, 4);
    ASSERT_EQ(three.levels.size(), 8u);
    ASSERT_EQ(four.levels.size(), 16u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(three.levels[4 + i] * std::sqrt(d), three_bit[i], 2e-6) << d << " " << i;
      EXPECT_EQ(three.levels[4 + i], -three.levels[3 - i]);
    }
    for (int i = 0; i < 8; ++i) EXPECT_NEAR(four.levels[8 + i] * std::sqrt(d), four_bit[i], 2e-6) << d << " " << i;
  }
}

// An independent check of what the levels are: Max (1960)'s 3-bit Lloyd–Max quantizer for
// N(0, 1) is ±0.2451, ±0.7560, ±1.3439, ±2.1520; vLLM's trapezoid solve lands within 2e-3 of it.
TEST(VllmCodebook, ThreeBitLevelsAreMaxsGaussianQuantizer) {
  const double max_1960[] = {0.2451, 0.7560, 1.3439, 2.1520};
  const VllmCodebook codebook = solve_vllm_codebook(128, 3);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(codebook.levels[4 + i] * std::sqrt(128.0), max_1960[i], 2e-3);
}

TEST(VllmCodebook, MidpointsAreFloatMeansOfNeighbours) {
  const VllmCodebook& codebook = vllm_codebook(64, 4);
  ASSERT_EQ(codebook.midpoints.size(), 15u);
  for (std::size_t i = 0; i < codebook.midpoints.size(); ++i) {
    EXPECT_EQ(codebook.midpoints[i], (codebook.levels[i] + codebook.levels[i + 1]) / 2.0f);
  }
  EXPECT_EQ(&vllm_codebook(64, 4), &codebook) << "cached";
}

// ---------------------------------------------------------------- keys

// Codes 1,6,1,6,2,5,3,4 at 3 bits pack, as vLLM's store kernel does (packed_24 = Σ code_j << 3j),
// into 0x8EAC71, little-endian; the fp16 norm 2.0 is 0x4000. The key is built from those codes:
// k = 2 · H y / sqrt(8) with y the unit vector along their levels (whose length is within 3% of 1,
// so every rotated coordinate stays inside its cell) and norm 2.
TEST(VllmKeyQuantizer, HandPackedKey) {
  constexpr int kDim = 8;
  const VllmCodebook& codebook = vllm_codebook(kDim, 3);
  const int codes[kDim] = {1, 6, 1, 6, 2, 5, 3, 4};
  double length = 0.0;
  for (int code : codes) length += static_cast<double>(codebook.levels[code]) * codebook.levels[code];
  std::vector<float> key(kDim);
  for (int j = 0; j < kDim; ++j) key[j] = static_cast<float>(codebook.levels[codes[j]] / std::sqrt(length));
  fwht_normalized(key.data(), 3);
  for (float& value : key) value *= 2.0f;

  const EncodedTensor encoded = encode("vllm_tq_key:b=3", kDim, key);
  EXPECT_EQ(encoded.bytes, (std::vector<std::uint8_t>{0x71, 0xAC, 0x8E, 0x00, 0x40}));
  EXPECT_DOUBLE_EQ(encoded.bits_per_value(), 5.0);  // 3 code bytes + 2 norm bytes for 8 values
  // With norm correction the decoded direction is the unit vector the key was built from.
  const std::vector<float> corrected = decode("vllm_tq_key:b=3,nc", encoded);
  for (int j = 0; j < kDim; ++j) EXPECT_NEAR(corrected[j], key[j], 2e-6f) << j;
  // Without it, the levels' own length (about 1 - D_mse) shortens every value alike.
  const std::vector<float> plain = decode("vllm_tq_key:b=3", encoded);
  for (int j = 0; j < kDim; ++j) EXPECT_NEAR(plain[j], key[j] * std::sqrt(length), 2e-6) << j;
}

TEST(VllmKeyQuantizer, BitsPerValueAreVllmsKeyPackedSize) {
  const std::vector<float> x64(64, 0.5f), x128(128, 0.5f);
  EXPECT_DOUBLE_EQ(encode("vllm_tq_key:b=3", 64, x64).bits_per_value(), 8.0 * 26 / 64);    // 24 + 2 bytes
  EXPECT_DOUBLE_EQ(encode("vllm_tq_key:b=4", 128, x128).bits_per_value(), 8.0 * 66 / 128); // 64 + 2 bytes
}

TEST(VllmKeyQuantizer, HeadDimMustBeAPowerOfTwoFromEight) {
  for (int dim : {4, 96, 127}) {
    const std::string message = input_error_message([&] { make_quantizer("vllm_tq_key:b=4")->check_dim(dim); });
    EXPECT_NE(message.find("head dim " + std::to_string(dim)), std::string::npos) << message;
    EXPECT_NE(message.find("Hadamard"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(make_quantizer("vllm_tq_key:b=3")->check_dim(256));
}

TEST(VllmKeyQuantizer, NormBeyondFp16IsAnInputErrorNamingTheToken) {
  std::vector<float> x(2 * 64, 1.0f);
  x[64 + 5] = 70000.0f;
  const std::string message = input_error_message([&] { encode("vllm_tq_key:b=4,nc", 64, x); });
  EXPECT_NE(message.find("token 1"), std::string::npos) << message;
  EXPECT_NE(message.find("65504"), std::string::npos) << message;
}

// ---------------------------------------------------------------- values

// lo = -1, hi = 14: s = 15/15 = 1; code = trunc(v + 1 + 0.5), a tie (0.5 -> 2.0) going up;
// 4-bit codes two per byte, the first in the low nibble; then fp16 1.0 (0x3C00) and -1.0 (0xBC00).
TEST(VllmValueQuantizer, HandPackedFourBitValue) {
  const std::vector<float> value = {-1.0f, 14.0f, 0.49f, 0.5f, 2.0f, 7.2f, 13.6f, 3.5f};
  const EncodedTensor encoded = encode("vllm_uniform:b=4", 8, value);
  EXPECT_EQ(encoded.bytes, (std::vector<std::uint8_t>{0xF0, 0x21, 0x83, 0x5F, 0x00, 0x3C, 0x00, 0xBC}));
  EXPECT_EQ(decode("vllm_uniform:b=4", encoded), (std::vector<float>{-1, 14, 0, 1, 2, 7, 14, 4}));
}

// Codes 0..7 at 3 bits: Σ code_j << 3j = 0xFAC688, little-endian, then fp16 1.0 and 0.0.
TEST(VllmValueQuantizer, HandPackedThreeBitValue) {
  const std::vector<float> value = {0, 1, 2, 3, 4, 5, 6, 7};
  const EncodedTensor encoded = encode("vllm_uniform:b=3", 8, value);
  EXPECT_EQ(encoded.bytes, (std::vector<std::uint8_t>{0x88, 0xC6, 0xFA, 0x00, 0x3C, 0x00, 0x00}));
  EXPECT_EQ(decode("vllm_uniform:b=3", encoded), value);
}

// s = 0 becomes 1e-8, whose fp16 copy is 0: every code is 0 and the vector decodes to fp16(lo).
TEST(VllmValueQuantizer, ConstantVectorDecodesToItsFp16Value) {
  const std::vector<float> value(16, 3.1f);
  const std::vector<float> decoded = decode("vllm_uniform:b=4", encode("vllm_uniform:b=4", 16, value));
  for (float v : decoded) EXPECT_EQ(v, 3.099609375f);  // fp16(3.1)
}

TEST(VllmValueQuantizer, BitsPerValueAreVllmsValuePackedSize) {
  const std::vector<float> x(128, 0.25f);
  EXPECT_DOUBLE_EQ(encode("vllm_uniform:b=4", 128, x).bits_per_value(), 8.0 * 68 / 128);  // 64 + 4 bytes
  EXPECT_DOUBLE_EQ(encode("vllm_uniform:b=3", 64, std::vector<float>(64, 1.0f)).bits_per_value(), 8.0 * 28 / 64);
}

// ---------------------------------------------------------------- fp8

// Scale 1: 500 saturates to 448 (0x7E); 1.0625, halfway between 1 and 1.125, goes to the
// even mantissa (1.0, 0x38); -0.1 is 0x9D (-0.1015625).
TEST(VllmFp8Quantizer, UnitScaleCastsWithSaturation) {
  const EncodedTensor encoded = encode("vllm_fp8", 4, {500.0f, 1.0625f, -0.1f, 0.0f});
  EXPECT_EQ(encoded.bytes, (std::vector<std::uint8_t>{0x7E, 0x38, 0x9D, 0x00}));
  EXPECT_EQ(decode("vllm_fp8", encoded), (std::vector<float>{448.0f, 1.0f, -0.1015625f, 0.0f}));
}

// amax 2: s = 2/448, x · (1/s) = 112, -448, 224 -> 0x6E, 0xFE, 0x76, then s as fp32.
// A row of amax 1e-7 takes the floor s = 1e-6: 1e-7 · 1e6 = 0.1 -> 0x1D (0.1015625).
TEST(VllmFp8Quantizer, TokenHeadScaleIsAmaxOver448WithAFloor) {
  const EncodedTensor encoded = encode("vllm_fp8:scale=token_head", 3, {0.5f, -2.0f, 1.0f, 1e-7f, 0.0f, -5e-8f});
  const float scale = 2.0f / 448.0f;
  std::vector<std::uint8_t> expected = {0x6E, 0xFE, 0x76};
  expected.resize(7);
  std::memcpy(expected.data() + 3, &scale, 4);
  const std::vector<std::uint8_t> first(encoded.bytes.begin(), encoded.bytes.begin() + 7);
  EXPECT_EQ(first, expected);
  EXPECT_EQ(encoded.bytes[7], 0x1D);
  float floor_scale;
  std::memcpy(&floor_scale, encoded.bytes.data() + 10, 4);
  EXPECT_EQ(floor_scale, 1e-6f);
  const std::vector<float> decoded = decode("vllm_fp8:scale=token_head", encoded);
  EXPECT_EQ(decoded[0], 112.0f * scale);
  EXPECT_EQ(decoded[1], -2.0f);
  EXPECT_EQ(decoded[3], 0.1015625f * 1e-6f);
  EXPECT_DOUBLE_EQ(encoded.bits_per_value(), 8.0 + 32.0 / 3);
}

// ---------------------------------------------------------------- presets

TEST(VllmPresets, EveryPresetNamesCanonicalRegisteredSpecs) {
  std::vector<std::string> names;
  for (const VllmPreset& preset : vllm_presets()) {
    names.emplace_back(preset.name);
    EXPECT_EQ(make_quantizer(preset.key_spec)->spec(), preset.key_spec);
    EXPECT_EQ(make_quantizer(preset.value_spec)->spec(), preset.value_spec);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc",
                                             "turboquant_3bit_nc", "fp8", "fp8_per_token_head"}));
  // TQ_PRESETS: key bits 8/4/3/3 (8 = fp8 keys), value bits 4/4/4/3, norm correction on the _nc ones.
  EXPECT_EQ(find_vllm_preset("turboquant_k3v4_nc").key_spec, "vllm_tq_key:b=3,nc");
  EXPECT_EQ(find_vllm_preset("turboquant_3bit_nc").value_spec, "vllm_uniform:b=3");
  EXPECT_EQ(find_vllm_preset("turboquant_k8v4").key_spec, "vllm_fp8");
}

TEST(VllmPresets, UnknownPresetListsTheKnownOnes) {
  const std::string message = input_error_message([] { find_vllm_preset("turboquant_2bit"); });
  EXPECT_NE(message.find("'turboquant_2bit'"), std::string::npos) << message;
  for (const VllmPreset& preset : vllm_presets()) EXPECT_NE(message.find(preset.name), std::string::npos) << message;
}

std::vector<int> quantized_layers(const VllmPreset& preset, int layer_count, const std::vector<int>& skipped = {}) {
  std::vector<int> layers;
  for (int layer = 0; layer < layer_count; ++layer) {
    if (vllm_layer_quantized(preset, layer, layer_count, skipped)) layers.push_back(layer);
  }
  return layers;
}

// vLLM's own cases (tests of get_boundary_skip_layers): 32 layers skip 0, 1, 30, 31; 4 layers
// skip all four; n is capped at half the layers, so 3 layers skip 0 and 2 and 1 layer none.
TEST(VllmPresets, TurboQuantLeavesTheBoundaryLayersUnquantized) {
  const VllmPreset& preset = find_vllm_preset("turboquant_4bit_nc");
  std::vector<int> middle;
  for (int layer = 2; layer < 30; ++layer) middle.push_back(layer);
  EXPECT_EQ(quantized_layers(preset, 32), middle);
  EXPECT_EQ(quantized_layers(preset, 4), std::vector<int>{});
  EXPECT_EQ(quantized_layers(preset, 3), std::vector<int>{1});
  EXPECT_EQ(quantized_layers(preset, 1), std::vector<int>{0});
  EXPECT_EQ(quantized_layers(preset, 6, {3}), (std::vector<int>{2}));
  EXPECT_THROW(vllm_layer_quantized(preset, 6, 6), InternalError);
}

TEST(VllmPresets, Fp8PresetsQuantizeEveryLayerButTheSkippedOnes) {
  for (const char* name : {"fp8", "fp8_per_token_head"}) {
    EXPECT_EQ(quantized_layers(find_vllm_preset(name), 4), (std::vector<int>{0, 1, 2, 3})) << name;
    EXPECT_EQ(quantized_layers(find_vllm_preset(name), 4, {0, 3}), (std::vector<int>{1, 2})) << name;
  }
}

TEST(VllmPresets, WhatAChunkReadsOfItsOwnTokens) {
  const VllmPreset& turboquant = find_vllm_preset("turboquant_k8v4");
  EXPECT_TRUE(vllm_chunk_reads_own_tokens_exact(turboquant, 0, 4096));  // a first chunk
  EXPECT_TRUE(vllm_chunk_reads_own_tokens_exact(turboquant, 0, 1));
  EXPECT_TRUE(vllm_chunk_reads_own_tokens_exact(turboquant, 512, 129));  // a long continuation
  EXPECT_FALSE(vllm_chunk_reads_own_tokens_exact(turboquant, 512, 128));  // a short one: the decode kernel
  EXPECT_FALSE(vllm_chunk_reads_own_tokens_exact(turboquant, 512, 1));    // a decode step
  for (const char* name : {"fp8", "fp8_per_token_head"}) {
    EXPECT_FALSE(vllm_chunk_reads_own_tokens_exact(find_vllm_preset(name), 0, 4096)) << name;
  }
}

}  // namespace
}  // namespace tqlab
