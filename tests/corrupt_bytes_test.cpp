// Decoders do not trust their bytes: for every registry example spec
// on a few shapes, the encoded bytes are mutated (byte flips at seeded
// positions, truncation, extension) and decode must either throw InputError
// or return finite values: never crash, write out of bounds, or return NaN or
// Inf. Run under ASan + UBSan (tools/test.sh) it also shows no sanitizer report.
// Plus the hand-made corruptions the review found: an outlier channel index
// far past the head dim, indices out of order, and stored norms and scales
// that are Inf or NaN.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "quant/registry.h"
#include "test_support.h"

namespace tqlab {
namespace {

using testing::input_error_message;

// Shapes: a power-of-two head dim (Hadamard, every block format) and an odd
// one (Haar, the review's D = 127; block formats refuse it in check_dim).
struct Shape {
  std::int64_t tokens;
  int dim;
};
constexpr Shape kShapes[] = {{6, 64}, {3, 127}};
constexpr int kFlipsPerCase = 16;      // single-byte flips per (spec, shape, role)
constexpr int kTruncationsPerCase = 3;
constexpr int kExtensionsPerCase = 2;

std::vector<float> keys_with_outlier_channel(const Shape& shape, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<std::size_t>(shape.tokens * shape.dim));
  for (float& v : x) v = static_cast<float>(rng.gaussian());
  for (std::int64_t t = 0; t < shape.tokens; ++t) x[static_cast<std::size_t>(t * shape.dim + 5)] += 9.0f;
  return x;
}

enum class Outcome { rejected, finite };

// Decodes `encoded`; fails the test on NaN/Inf output or any exception other than InputError.
Outcome decode_outcome(const Quantizer& quantizer, const EncodedTensor& encoded, const QuantContext& context,
                       const std::string& what) {
  std::vector<float> out(static_cast<std::size_t>(encoded.tokens * encoded.dim));
  try {
    quantizer.decode(encoded, context, out.data());
  } catch (const InputError&) {
    return Outcome::rejected;
  } catch (const std::exception& other) {
    ADD_FAILURE() << what << ": not an InputError: " << other.what();
    return Outcome::rejected;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) {
      ADD_FAILURE() << what << ": decoded value " << i << " is " << out[i];
      break;
    }
  }
  return Outcome::finite;
}

TEST(CorruptBytesTest, MutatedBytesOfEveryExampleSpecAreRejectedOrDecodeFinite) {
  int rejected = 0, finite = 0;
  Rng rng(2026);
  for (const MethodInfo& method : quantizer_methods()) {
    for (const std::string& spec : method.example_specs) {
      const auto quantizer = make_quantizer(spec);
      for (const Shape& shape : kShapes) {
        try {
          quantizer->check_dim(shape.dim);
        } catch (const InputError&) {
          continue;  // a shape this spec refuses to encode has no bytes to mutate
        }
        for (Role role : {Role::key, Role::value}) {
          // Every decode at d = 127 builds a Haar matrix: one role there keeps the test quick.
          if (shape.dim == 127 && role == Role::value) continue;
          const QuantContext context{9, role, 1, 2};
          const auto x = keys_with_outlier_channel(shape, rng.next_u64());
          const EncodedTensor good = quantizer->encode(shape.tokens, shape.dim, x.data(), context);
          const std::string where = spec + " at " + std::to_string(shape.tokens) + "x" + std::to_string(shape.dim) +
                                    " (" + role_name(role) + ")";
          auto count = [&](Outcome outcome) { (outcome == Outcome::rejected ? rejected : finite) += 1; };
          for (int flip = 0; flip < kFlipsPerCase; ++flip) {
            EncodedTensor bad = good;
            const std::size_t at = rng.next_u64() % bad.bytes.size();
            // XOR with a nonzero byte: the byte always changes.
            bad.bytes[at] ^= static_cast<std::uint8_t>(1 + rng.next_u64() % 255);
            count(decode_outcome(*quantizer, bad, context, where + ", byte " + std::to_string(at) + " flipped"));
          }
          for (int cut = 0; cut < kTruncationsPerCase; ++cut) {
            EncodedTensor bad = good;
            bad.bytes.resize(cut == 0 ? 0 : rng.next_u64() % bad.bytes.size());
            const Outcome outcome = decode_outcome(*quantizer, bad, context, where + ", truncated");
            EXPECT_EQ(outcome, Outcome::rejected) << where << " truncated to " << bad.bytes.size() << " bytes";
            count(outcome);
          }
          for (int grow = 0; grow < kExtensionsPerCase; ++grow) {
            EncodedTensor bad = good;
            for (std::uint64_t extra = 1 + rng.next_u64() % 16; extra > 0; --extra) {
              bad.bytes.push_back(static_cast<std::uint8_t>(rng.next_u64()));
            }
            const Outcome outcome = decode_outcome(*quantizer, bad, context, where + ", extended");
            EXPECT_EQ(outcome, Outcome::rejected) << where << " extended to " << bad.bytes.size() << " bytes";
            count(outcome);
          }
        }
      }
    }
  }
  std::printf("[ mutations ] %d decodes rejected with InputError, %d decoded finite\n", rejected, finite);
  EXPECT_GT(rejected, 0);
  EXPECT_GT(finite, 0);
}

// The review's case: D = 127, an outlier index of 60000 (would write
// out[token * 127 + 60000], past the buffer). With one token and b = 2 the
// regular group's codes take 30 bytes whether it holds 119 or 120 channels,
// so the size check alone does not catch it. Also an index equal to its
// predecessor (a channel left unwritten), and one at the head dim.
TEST(CorruptBytesTest, OutlierChannelIndicesAreCheckedBeforeUse) {
  const Shape shape{1, 127};
  const auto quantizer = make_quantizer("tq:b=2,outliers=8@3");
  const QuantContext context{1, Role::key, 0, 0};
  const auto x = keys_with_outlier_channel(shape, 3);
  const EncodedTensor good = quantizer->encode(shape.tokens, shape.dim, x.data(), context);
  auto with_index = [&](int slot, std::uint16_t channel) {
    EncodedTensor bad = good;
    std::memcpy(bad.bytes.data() + 2 * slot, &channel, 2);
    return bad;
  };
  std::uint16_t first;
  std::memcpy(&first, good.bytes.data(), 2);
  for (const auto& [bad_tensor, expected] : std::vector<std::pair<EncodedTensor, std::string>>{
           {with_index(7, 60000), "outlier channel #7 is 60000"},
           {with_index(7, 127), "outlier channel #7 is 127"},
           {with_index(1, first), "outlier channel #1 is " + std::to_string(first)}}) {
    const EncodedTensor& bad = bad_tensor;  // clang 14 cannot capture a structured binding in a lambda
    std::vector<float> out(static_cast<std::size_t>(shape.tokens * shape.dim));
    const std::string message = input_error_message([&] { quantizer->decode(bad, context, out.data()); });
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_NE(message.find("strictly ascending"), std::string::npos) << message;
    EXPECT_NE(message.find("tq:b=2,outliers=8@3"), std::string::npos) << message;
  }
}

// A stored norm that is Inf or NaN (a flipped fp16 exponent) is named with its token.
TEST(CorruptBytesTest, NonFiniteStoredNormsAreRejectedNamingTheToken) {
  const Shape shape{4, 64};
  const QuantContext context{1, Role::value, 2, 3};
  const auto x = keys_with_outlier_channel(shape, 4);
  for (const char* spec : {"tq:b=3", "tq:b=3,qjl=prod", "tq:b=4,norm=fp32"}) {
    const auto quantizer = make_quantizer(spec);
    const EncodedTensor good = quantizer->encode(shape.tokens, shape.dim, x.data(), context);
    const bool fp32 = std::string(spec).find("fp32") != std::string::npos;
    const std::size_t norm_bytes = fp32 ? 4 : 2;
    // Without QJL the norms are the last tokens * norm_bytes bytes; with it the
    // residual norms follow them. Token 2's norm:
    const std::size_t norms = good.bytes.size() - shape.tokens * norm_bytes *
                                                      (std::string(spec).find("qjl") != std::string::npos ? 2 : 1);
    for (float stored : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), -1.0f}) {
      EncodedTensor bad = good;
      store_element(stored, fp32 ? DType::f32 : DType::f16, bad.bytes.data() + norms + 2 * norm_bytes);
      std::vector<float> out(static_cast<std::size_t>(shape.tokens * shape.dim));
      const std::string message = input_error_message([&] { quantizer->decode(bad, context, out.data()); });
      EXPECT_NE(message.find("token 2, block 0 stores norm"), std::string::npos) << spec << ": " << message;
      EXPECT_NE(message.find("value tensor of layer 2, kv head 3"), std::string::npos) << message;
    }
  }
}

// Stored scales of the baselines that encode never writes.
TEST(CorruptBytesTest, NonFiniteStoredScalesAreRejected) {
  const Shape shape{4, 64};
  const QuantContext context{1, Role::key, 0, 0};
  const auto x = keys_with_outlier_channel(shape, 5);
  const std::uint16_t fp16_inf = 0x7C00, fp16_nan = 0x7E00;
  for (const char* spec : {"q8_0", "q4_0", "q4_1", "kivi:b=2", "fp16", "bf16"}) {
    const auto quantizer = make_quantizer(spec);
    const EncodedTensor good = quantizer->encode(shape.tokens, shape.dim, x.data(), context);
    for (std::uint16_t bits : {fp16_inf, fp16_nan}) {
      EncodedTensor bad = good;
      // Each format's first two bytes: a block's or group's fp16 scale, or the first value.
      std::uint16_t stored =
          std::string(spec) == "bf16" ? static_cast<std::uint16_t>(bits == fp16_inf ? 0x7F80 : 0x7FC0) : bits;
      std::memcpy(bad.bytes.data(), &stored, 2);
      std::vector<float> out(static_cast<std::size_t>(shape.tokens * shape.dim));
      const std::string message = input_error_message([&] { quantizer->decode(bad, context, out.data()); });
      EXPECT_NE(message.find("corrupt"), std::string::npos) << spec << ": " << message;
    }
  }
  for (const char* spec : {"fp8_e4m3", "fp8_e5m2", "fp32"}) {
    const auto quantizer = make_quantizer(spec);
    const EncodedTensor good = quantizer->encode(shape.tokens, shape.dim, x.data(), context);
    for (float scale : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), -2.0f,
                        std::numeric_limits<float>::max()}) {
      if (std::string(spec) == "fp32" && std::isfinite(scale)) continue;  // fp32 stores values, any finite is fine
      EncodedTensor bad = good;
      std::memcpy(bad.bytes.data(), &scale, 4);
      std::vector<float> out(static_cast<std::size_t>(shape.tokens * shape.dim));
      const std::string message = input_error_message([&] { quantizer->decode(bad, context, out.data()); });
      EXPECT_NE(message.find("corrupt"), std::string::npos) << spec << " scale " << scale << ": " << message;
    }
  }
}

}  // namespace
}  // namespace tqlab
