// The codec cache: one build per (kind, size, seed), the same bits as a fresh build, shared by
// encode and decode and threads, bounded in bytes.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "quant/codec_cache.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

std::vector<float> rotate(const Rotation& rotation, int n) {
  Rng rng(5);
  std::vector<float> x(static_cast<std::size_t>(n) * rotation.dim());
  for (float& value : x) value = static_cast<float>(rng.gaussian());
  std::vector<float> y(x.size());
  rotation.forward(n, x.data(), y.data());
  return y;
}

TEST(CodecCache, ACachedObjectIsTheOneAFreshBuildGives) {
  clear_codec_cache();
  for (RotationKind kind : {RotationKind::hadamard, RotationKind::hadamard2, RotationKind::haar}) {
    const auto cached = cached_rotation(kind, 64, 99);
    EXPECT_EQ(rotate(*cached, 3), rotate(*Rotation::make(kind, 64, 99), 3));
    EXPECT_EQ(cached.get(), cached_rotation(kind, 64, 99).get());
    EXPECT_NE(cached.get(), cached_rotation(kind, 64, 100).get());
  }
  const auto sketch = cached_qjl_sketch(32, 48, 7);
  EXPECT_EQ(sketch->matrix(), QjlSketch(32, 48, 7).matrix());
  EXPECT_EQ(sketch.get(), cached_qjl_sketch(32, 48, 7).get());
  EXPECT_EQ(codec_cache_stats().builds, 3u * 2 + 1);
}

TEST(CodecCache, EncodeAndDecodeShareTheRotationsOfAContext) {
  clear_codec_cache();
  const auto quantizer = make_quantizer("tq:b=3,rot=haar,block=32,qjl=extra");
  std::vector<float> x(16 * 128);
  Rng rng(1);
  for (float& value : x) value = static_cast<float>(rng.gaussian());
  const QuantContext context{4, Role::key, 2, 1};
  const EncodedTensor encoded = quantizer->encode(16, 128, x.data(), context);
  const std::size_t after_encode = codec_cache_stats().builds;
  EXPECT_EQ(after_encode, 4u * 2);  // 4 blocks: a rotation and a QJL projection each
  std::vector<float> out(x.size());
  quantizer->decode(encoded, context, out.data());
  quantizer->decode(encoded, context, out.data());
  (void)quantizer->encode(16, 128, x.data(), context);
  EXPECT_EQ(codec_cache_stats().builds, after_encode);
  // Another head is another context.
  (void)quantizer->encode(16, 128, x.data(), QuantContext{4, Role::key, 2, 2});
  EXPECT_EQ(codec_cache_stats().builds, 2 * after_encode);
}

TEST(CodecCache, ThreadsAskingForOneObjectBuildItOnce) {
  clear_codec_cache();
  std::vector<std::thread> threads;
  std::vector<const Rotation*> seen(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back(
        [&, t] { seen[static_cast<std::size_t>(t)] = cached_rotation(RotationKind::haar, 256, 3).get(); });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(codec_cache_stats().builds, 1u);
  for (const Rotation* rotation : seen) EXPECT_EQ(rotation, seen[0]);
}

TEST(CodecCache, StaysWithinItsBudgetAndHoldersKeepTheirObjects) {
  clear_codec_cache();
  const std::size_t haar_64 = 2 * 64 * 64 * sizeof(float);
  set_codec_cache_budget(3 * haar_64);
  const auto first = cached_rotation(RotationKind::haar, 64, 0);
  const std::vector<float> before = rotate(*first, 2);
  for (std::uint64_t seed = 1; seed < 10; ++seed) (void)cached_rotation(RotationKind::haar, 64, seed);
  EXPECT_LE(codec_cache_stats().bytes, 3 * haar_64);
  EXPECT_EQ(codec_cache_stats().entries, 3u);
  EXPECT_EQ(rotate(*first, 2), before);  // evicted from the cache, alive in its holder
  (void)cached_rotation(RotationKind::haar, 64, 0);
  EXPECT_EQ(codec_cache_stats().builds, 11u);  // built again after eviction
  set_codec_cache_budget(std::size_t{256} << 20);
  clear_codec_cache();
}

}  // namespace
}  // namespace tqlab
