// The tq layout options on data shaped like real keys: head dims that are not
// powers of two, blocks, centering, outlier channels, and the rotation's
// effect on real keys (random vectors are already isotropic, so they cannot
// tell a rotation from none).
#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "io/tensor_file.h"
#include "kv/kv_dump.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

// Gaussian keys plus a large shared offset on a few channels, as real keys have.
std::vector<float> keys_with_outlier_channels(std::int64_t tokens, int dim, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<std::size_t>(tokens * dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int c = 0; c < dim; ++c) {
      const double offset = (c == 3 || c == dim - 2) ? 12.0 : 0.0;
      const double spread = (c == 3 || c == dim - 2) ? 3.0 : 1.0;
      x[static_cast<std::size_t>(t * dim + c)] = static_cast<float>(offset + spread * rng.gaussian());
    }
  }
  return x;
}

double relative_mse(const std::string& spec, std::int64_t tokens, int dim, const std::vector<float>& x,
                    std::uint64_t seed = 0) {
  const auto quantizer = make_quantizer(spec);
  quantizer->check_dim(dim);
  const QuantContext context{seed, Role::key, 0, 0};
  const EncodedTensor encoded = quantizer->encode(tokens, dim, x.data(), context);
  std::vector<float> decoded(x.size());
  quantizer->decode(encoded, context, decoded.data());
  double error = 0, energy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(std::isfinite(decoded[i])) << spec;
    error += (static_cast<double>(x[i]) - decoded[i]) * (static_cast<double>(x[i]) - decoded[i]);
    energy += static_cast<double>(x[i]) * x[i];
  }
  return error / energy;
}

TEST(TqLayoutTest, HeadDimsThatAreNotPowersOfTwoWork) {
  // MLA and other models: 80, 96, 192, 576. Default rotation (Haar) and dividing blocks.
  for (int dim : {80, 96, 192, 576}) {
    const auto x = keys_with_outlier_channels(64, dim, 1);
    const double whole = relative_mse("tq:b=4", 64, dim, x);
    EXPECT_LT(whole, 0.02) << dim;
    for (int block : {16, 32}) {
      if (dim % block != 0) continue;
      EXPECT_LT(relative_mse("tq:b=4,block=" + std::to_string(block), 64, dim, x), 0.02) << dim << "/" << block;
    }
  }
}

TEST(TqLayoutTest, SmallerBlocksCostBitsAndBuyAccuracyOnOutlierKeys) {
  // The perplexity study: a norm per 32-value block isolates the outlier channels' energy.
  const auto x = keys_with_outlier_channels(512, 128, 2);
  EXPECT_LT(relative_mse("tq:b=3,block=32", 512, 128, x), relative_mse("tq:b=3", 512, 128, x));
}

TEST(TqLayoutTest, CenteringRemovesSharedOffsets) {
  const auto x = keys_with_outlier_channels(512, 128, 3);
  const double plain = relative_mse("tq:b=3", 512, 128, x);
  const double per_channel = relative_mse("tq:b=3,center=channel", 512, 128, x);
  EXPECT_LT(per_channel, 0.5 * plain);  // the offsets are most of the energy
  const double per_block = relative_mse("tq:b=3,block=32,center=block", 512, 128, x);
  EXPECT_LT(per_block, relative_mse("tq:b=3,block=32", 512, 128, x) * 1.05);
}

TEST(TqLayoutTest, OutlierChannelsGetTheirOwnGroup) {
  // With the two outlier channels split off at more bits, the error falls
  // below the plain quantizer's at nearly the same bits.
  const auto x = keys_with_outlier_channels(512, 128, 4);
  const double plain = relative_mse("tq:b=3", 512, 128, x);
  const double split = relative_mse("tq:b=3,outliers=2@8", 512, 128, x);
  EXPECT_LT(split, 0.5 * plain);
  // Even at 1 bit for the rest, 8 bits on the right two channels beat plain 1 bit:
  // the split only helps when it picks the channels that hold the energy.
  EXPECT_LT(relative_mse("tq:b=1,outliers=2@8", 512, 128, x), relative_mse("tq:b=1", 512, 128, x));
}

TEST(TqLayoutTest, RotationHelpsOnRealKeys) {
  const std::string path = std::string(TQLAB_SHARED_DATA_DIR) + "/stories260k_qkv.safetensors";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real dump absent: " << path;
  const auto file = TensorFile::open(path);
  KvDumpSpec spec;
  spec.layout = "seq head token dim";
  const KvDump dump(*file, spec);
  double rotated = 0, unrotated = 0;
  for (int layer = 0; layer < static_cast<int>(dump.layers().size()); ++layer) {
    const KvLayerShape& shape = dump.layers()[static_cast<std::size_t>(layer)];
    std::vector<float> keys(static_cast<std::size_t>(shape.tokens * shape.key_dim));
    for (int head = 0; head < shape.kv_heads; ++head) {
      dump.read_keys(layer, 0, head, keys.data());
      rotated += relative_mse("tq:b=2", shape.tokens, shape.key_dim, keys, 5);
      unrotated += relative_mse("tq:b=2,rot=none", shape.tokens, shape.key_dim, keys, 5);
    }
  }
  // Real keys are anisotropic: the codebook fits their rotated coordinates, not the raw ones.
  EXPECT_LT(rotated, unrotated);
}

}  // namespace
}  // namespace tqlab

namespace tqlab {
namespace {

TEST(TqLayoutTest, MeansBeyondHalfPrecisionAreErrorsNamingTheirPlace) {
  // Values near 7e4 fit fp32 norms but not the fp16 slots of the stored means.
  std::vector<float> x(16 * 32, 1.0f);
  for (int t = 0; t < 16; ++t) x[static_cast<std::size_t>(t * 32 + 5)] = 7e4f;
  const QuantContext context{0, Role::key, 2, 1};
  try {
    make_quantizer("tq:b=3,center=channel,norm=fp32")->encode(16, 32, x.data(), context);
    FAIL() << "a channel mean beyond fp16 was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("channel 5 with mean 70000"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("layer 2, kv head 1"), std::string::npos) << error.what();
  }
  for (float& v : x) v = 7e4f;
  try {
    make_quantizer("tq:b=3,block=8,center=block,norm=fp32")->encode(16, 32, x.data(), context);
    FAIL() << "a block mean beyond fp16 was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("token 0, block 0 has mean 70000"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tqlab
