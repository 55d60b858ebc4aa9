// Pins the exact bytes the tq quantizer emits and the exact floats it decodes
// to, for a fixed-seed tensor and a set of specs covering every code path
// (bit widths 1..8, blocks, rotations, QJL, norm types, centering, outliers,
// head dims that take the register, in-memory and Haar paths).
//
// The hashes were recorded with the implementation of commit 74f34ac, before
// the kernels of tq_kernels.cpp were rewritten for speed, so this test proves
// that the speed work changed neither the packed layout nor any decoded bit.
// A deliberate change of the layout or of the arithmetic must update
// them and say so in its commit message.
//
// Every row holds in every build: the default -march=native one (AVX2, FMA)
// and a portable -DTQLAB_NATIVE=OFF one (checked when -ffp-contract=off and
// the scalar Eigen QR were introduced; the QJL rows' decoded hashes were
// re-pinned then, their encoded bytes did not change). So the same spec and
// seed give the same bytes and the same decoded floats on every x86-64 machine.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

// FNV-1a, 64 bits: a stable, dependency-free digest of a byte string.
std::uint64_t fnv1a(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// tokens x dim floats, KV-like: Gaussian rows with a few large channel
// offsets (so center= and outliers= have something to find), a zero row, a
// row of tiny norm and a row of large norm.
std::vector<float> layout_tensor(std::int64_t tokens, int dim, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<std::size_t>(tokens * dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int c = 0; c < dim; ++c) {
      const float offset = (c % 17 == 3) ? 4.0f : 0.0f;
      x[static_cast<std::size_t>(t * dim + c)] = offset + static_cast<float>(rng.gaussian());
    }
  }
  auto row = [&](std::int64_t t) { return x.begin() + t * dim; };
  if (tokens > 5) {
    std::fill(row(1), row(2), 0.0f);
    for (auto it = row(2); it != row(3); ++it) *it *= 1e-6f;
    for (auto it = row(4); it != row(5); ++it) *it *= 300.0f;
  }
  return x;
}

struct Golden {
  const char* spec;
  std::int64_t tokens;
  int dim;
  std::uint64_t bytes_hash;    // FNV-1a of the encoded bytes
  std::uint64_t decoded_hash;  // FNV-1a of the decoded floats' bit patterns
};

// 300 tokens: more than one 256-token chunk, and not a multiple of 8.
const Golden kGoldens[] = {
    {"tq:b=4", 300, 128, 0xc1a55b7af8523281, 0x88425f447d820a5c},
    {"tq:b=1", 300, 128, 0x59c1cc8c01a1e020, 0xedb16ed15eda45e1},
    {"tq:b=2", 300, 128, 0xd77f30cf188bffe0, 0x7f368dfd99aecdde},
    {"tq:b=3", 300, 128, 0x2c676c0eb8fc37c, 0x1d6d5dd78be9fbcb},
    {"tq:b=5", 300, 128, 0xb6d5086a6ed738e9, 0x286f162f2582b997},
    {"tq:b=8", 300, 128, 0x123c6d098642ac68, 0xe63ed3b8c054df4a},
    {"tq:b=4,block=32", 300, 128, 0x72adf9464efea65, 0xa61c6245876b1d1b},
    {"tq:b=4,block=16", 300, 128, 0x7d58cd28367989b3, 0xb167de725a9f985e},
    {"tq:b=4,block=8", 300, 128, 0x5ec389aa839c4a38, 0x516127a187a056dd},
    {"tq:b=4,block=4", 300, 128, 0xdd66ae3c851895c6, 0x5e5834183de7e9e2},
    {"tq:b=4,rot=haar", 300, 128, 0xe427126a8cb65ca5, 0x3c5535c79c435e11},
    {"tq:b=3,rot=none", 300, 128, 0x77ba383df8a283d, 0x8926061a6d6fae6f},
    {"tq:b=4,cb=gauss", 300, 128, 0xe7d011c45ab0ad50, 0xa29c7e5d26c0f826},
    {"tq:b=3,cb=uniform", 300, 128, 0x8ad96d19504651d5, 0xdf1d246a767d0fdb},
    {"tq:b=3,nc", 300, 128, 0x2c676c0eb8fc37c, 0xa2502631d2a225a9},
    {"tq:b=2,debias", 300, 128, 0xd77f30cf188bffe0, 0x82b771973ee9e4ee},
    {"tq:b=3,qjl=prod", 300, 128, 0x93bf1f18913f99aa, 0xc82f8df169b07bb5},
    {"tq:b=1,qjl=prod", 300, 128, 0x6452c0c124ad3d44, 0xc5c6d2c340b03e79},
    {"tq:b=2,qjl=extra,qjl_m=64", 300, 128, 0xe2efb8510bd43f08, 0x64e1a7f12d439f7b},
    {"tq:b=4,norm=bf16", 300, 128, 0xc9bc004340b7aa0c, 0x3732934b6f7dde77},
    {"tq:b=3,norm=fp32", 300, 128, 0x43298ad1c7a66192, 0xb5e9d035e1664785},
    {"tq:b=3,block=32,center=block", 300, 128, 0xa7a816e5cfb46faf, 0x24342fd3b938ec81},
    {"tq:b=3,center=channel", 300, 128, 0x86a5f26261e76eae, 0x4e7eb8e2646cb184},
    {"tq:b=2,outliers=8@3", 300, 128, 0x122e06628467d734, 0x94a9e26d27ffcf49},
    {"tq:b=4", 300, 256, 0x89557d7a7c839c2b, 0x92f42c61dd916a4b},
    {"tq:b=4", 300, 64, 0x9cc7158cf08730b0, 0xba46dd6f02329709},
    {"tq:b=4", 300, 96, 0xbd6eab365b94cfca, 0x44f7276fd1c9ac8f},
    {"tq:b=5", 9, 6, 0x92abfdaaab1cbaa3, 0xb19012f3e746e855},
};

TEST(TqPinnedLayoutTest, EncodedBytesAndDecodedFloatsMatchThePinnedHashes) {
  for (const Golden& golden : kGoldens) {
    const auto x = layout_tensor(golden.tokens, golden.dim, 2024);
    const auto quantizer = make_quantizer(golden.spec);
    const QuantContext context{5, Role::key, 1, 2};
    const EncodedTensor encoded = quantizer->encode(golden.tokens, golden.dim, x.data(), context);
    std::vector<float> decoded(x.size());
    quantizer->decode(encoded, context, decoded.data());
    const std::uint64_t bytes_hash = fnv1a(encoded.bytes.data(), encoded.bytes.size());
    const std::uint64_t decoded_hash = fnv1a(decoded.data(), sizeof(float) * decoded.size());
    EXPECT_EQ(bytes_hash, golden.bytes_hash) << golden.spec << " dim " << golden.dim << ": bytes 0x" << std::hex
                                             << bytes_hash;
    EXPECT_EQ(decoded_hash, golden.decoded_hash) << golden.spec << " dim " << golden.dim << ": decoded 0x"
                                                 << std::hex << decoded_hash;
  }
}

// The kernels process rows in groups and chunks; a row's bytes and decoded
// floats must not depend on which group or chunk it fell in. Encoding each
// token alone gives the same codes, norm and decoded row as encoding all of
// them together (specs without per-tensor side data).
TEST(TqPinnedLayoutTest, EachRowEncodesAndDecodesAloneAsInABatch) {
  const std::int64_t tokens = 261;  // one full chunk and a ragged tail
  const int dim = 128;
  const auto x = layout_tensor(tokens, dim, 77);
  for (const char* spec : {"tq:b=4", "tq:b=2", "tq:b=3", "tq:b=8", "tq:b=4,block=32", "tq:b=3,qjl=prod"}) {
    const auto quantizer = make_quantizer(spec);
    const QuantContext context{3, Role::value, 0, 1};
    const EncodedTensor batch = quantizer->encode(tokens, dim, x.data(), context);
    std::vector<float> batch_decoded(x.size());
    quantizer->decode(batch, context, batch_decoded.data());
    for (std::int64_t t = 0; t < tokens; ++t) {
      const EncodedTensor alone = quantizer->encode(1, dim, x.data() + t * dim, context);
      std::vector<float> alone_decoded(static_cast<std::size_t>(dim));
      quantizer->decode(alone, context, alone_decoded.data());
      ASSERT_EQ(0, std::memcmp(alone_decoded.data(), batch_decoded.data() + t * dim, sizeof(float) * dim))
          << spec << " token " << t;
    }
  }
}

// encode finds NaN and Inf through the block norms instead of a scan of its
// own; the error must still name the first non-finite value of the tensor,
// even when an earlier token's norm overflows fp16 (which alone is an error
// of its own) and when the value sits in a later chunk.
TEST(TqPinnedLayoutTest, NonFiniteValuesAreNamedAsByAnUpfrontScan) {
  const std::int64_t tokens = 300;
  const int dim = 128;
  for (const char* spec : {"tq:b=4", "tq:b=4,block=32", "tq:b=3,block=32,center=block", "tq:b=3,center=channel",
                           "tq:b=2,outliers=8@3", "tq:b=3,qjl=prod"}) {
    for (const float bad : {NAN, INFINITY, -INFINITY}) {
      auto x = layout_tensor(tokens, dim, 9);
      for (int c = 0; c < dim; ++c) x[static_cast<std::size_t>(3 * dim + c)] = 1e5f;  // norm beyond fp16
      x[static_cast<std::size_t>(270 * dim + 77)] = bad;
      x[static_cast<std::size_t>(280 * dim + 5)] = NAN;
      try {
        make_quantizer(spec)->encode(tokens, dim, x.data(), QuantContext{});
        FAIL() << spec << ": non-finite input accepted";
      } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find("token 270, channel 77"), std::string::npos) << spec << ": "
                                                                                               << error.what();
      }
    }
    auto x = layout_tensor(tokens, dim, 9);
    for (int c = 0; c < dim; ++c) x[static_cast<std::size_t>(3 * dim + c)] = 1e5f;
    try {
      make_quantizer(spec)->encode(tokens, dim, x.data(), QuantContext{});
      FAIL() << spec << ": a norm beyond fp16 accepted";
    } catch (const InputError& error) {
      // With center=block the block's mean (1e5) overflows its fp16 slot before the norm is taken.
      const bool centered = std::string(spec).find("center=block") != std::string::npos;
      const char* expected = centered ? "token 3, block 0 has mean 100000, beyond fp16" : "token 3 has norm";
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << spec << ": " << error.what();
    }
  }
}

}  // namespace
}  // namespace tqlab
