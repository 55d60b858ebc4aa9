// Every registered quantizer on rows at the ends of the float range:
// rows of subnormals (a row of 1e-40 has a subnormal norm, whose reciprocal
// overflows), rows of +-FLT_MAX/sqrt(D) (a norm at FLT_MAX), and rows of mixed
// magnitudes. Looped over every example spec of quantizer_methods(), so a new
// method is tested for free.
//
// What must hold: decode is finite, always. Where the format can represent
// the data, encode succeeds and the relative error Σ‖x−x̃‖²/Σ‖x‖² stays within
// the family's bound on ordinary data; where it cannot (fp16 side values
// underflow or overflow), encode may refuse with an InputError, and a decode
// may be zero but never worse than zero (relative error <= 1).
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "quant/registry.h"
#include "quant/spec.h"
#include "test_support.h"

namespace tqlab {
namespace {

constexpr std::int64_t kTokens = 16;
constexpr int kDim = 64;

// Relative-error bounds per family on data the format represents: about twice
// the worst example spec of the family on N(0, 1) data of this shape (the
// worst: kivi:b=1,group=7 at ~0.28; tq:b=2 ~ 0.12-0.13 with debias or
// outliers; fp8_e5m2's 2 mantissa bits ~ 3e-3; q4_0 ~ 1e-2). In the mixed
// class three rows carry nearly all the energy, so the spread is wider than
// over many rows.
constexpr double kExactBound = 0.0;       // fp32 stores the floats themselves
constexpr double kHalfFloatBound = 1e-4;  // fp16, bf16: 8-11 mantissa bits
constexpr double kFp8Bound = 1e-2;
constexpr double kBlockBound = 5e-2;      // q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl
constexpr double kKiviBound = 0.6;
constexpr double kTqBound = 0.6;
// tq:b=1,qjl=prod is the pure 1-bit QJL sketch: unbiased for inner products,
// but E‖r̂ − u‖² = π/2 − 1/m ≈ 1.55 per unit vector, worse than zero in MSE;
// twice that covers the spread over the three rows that carry the energy.
constexpr double kPureQjlBound = 3.2;
// Never worse than decoding to zero: the bound where the format cannot represent the data.
constexpr double kZeroBound = 1.0;

double family_bound(const std::string& method, const std::string& spec) {
  if (spec == "tq:b=1,qjl=prod") return kPureQjlBound;
  static const std::map<std::string, double> bounds = {
      {"fp32", kExactBound}, {"fp16", kHalfFloatBound}, {"bf16", kHalfFloatBound}, {"fp8_e4m3", kFp8Bound},
      {"fp8_e5m2", kFp8Bound}, {"q8_0", kBlockBound},   {"q4_0", kBlockBound},     {"q4_1", kBlockBound},
      {"q5_0", kBlockBound}, {"q5_1", kBlockBound},   {"iq4_nl", kBlockBound},
      {"kivi", kKiviBound},  {"tq", kTqBound}};
  const auto found = bounds.find(method);
  EXPECT_NE(found, bounds.end()) << "no error bound for method " << method << ": add one";
  return found == bounds.end() ? kZeroBound : found->second;
}

bool stores_norms_in_fp32(const std::string& spec) { return spec.find("norm=fp32") != std::string::npos; }

// The input classes, with which specs can represent each.
struct InputClass {
  std::string name;
  std::vector<float> x;
  std::function<bool(const std::string& method, const std::string& spec)> representable;
};

std::vector<float> signed_rows(float magnitude, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<std::size_t>(kTokens * kDim));
  for (float& v : x) v = rng.coin() ? -magnitude : magnitude;
  return x;
}

std::vector<InputClass> input_classes() {
  std::vector<InputClass> classes;
  // 1e-40 per value: the row norm 8e-40 is subnormal. Stored as fp32 (the
  // values, a tq norm) it keeps ~20 bits; fp16 side values flush it to zero;
  // fp8's scale 1e-40 / max is itself subnormal with a few bits (e5m2: one
  // quantum, 20% off), so fp8 only has to stay finite and no worse than zero.
  classes.push_back({"subnormal rows", signed_rows(1e-40f, 1), [](const std::string& method, const std::string& spec) {
                       return method == "fp32" || stores_norms_in_fp32(spec);
                     }});
  // |x_i| = FLT_MAX / sqrt(D): the row norm is FLT_MAX, up to rounding.
  classes.push_back({"FLT_MAX/sqrt(D) rows", signed_rows(FLT_MAX / std::sqrt(static_cast<float>(kDim)), 2),
                     [](const std::string& method, const std::string& spec) {
                       return method == "fp32" || method == "bf16" || method.starts_with("fp8") ||
                              (stores_norms_in_fp32(spec) && spec.find("center") == std::string::npos);
                     }});
  // Rows at 1e-40, 1e-30, 1e-10, 1 and 100 in turn, values spread over 2^-4..2^4
  // within a row: every format represents the rows that carry the energy.
  {
    Rng rng(3);
    std::vector<float> x(static_cast<std::size_t>(kTokens * kDim));
    const float scales[] = {1e-40f, 1e-30f, 1e-10f, 1.0f, 1e2f};
    for (std::int64_t t = 0; t < kTokens; ++t) {
      for (int c = 0; c < kDim; ++c) {
        const double spread = std::ldexp(1.0, static_cast<int>(rng.uniform() * 9) - 4);
        x[static_cast<std::size_t>(t * kDim + c)] = static_cast<float>(scales[t % 5] * spread * rng.gaussian());
      }
    }
    classes.push_back({"mixed-magnitude rows", x, [](const std::string&, const std::string&) { return true; }});
  }
  return classes;
}

TEST(ExtremeMagnitudeTest, EveryExampleSpecDecodesFiniteWithSaneError) {
  int representable_cases = 0;
  for (const InputClass& input : input_classes()) {
    for (const MethodInfo& method : quantizer_methods()) {
      for (const std::string& spec : method.example_specs) {
        for (Role role : {Role::key, Role::value}) {
          SCOPED_TRACE(input.name + ", " + spec + ", " + role_name(role));
          const auto quantizer = make_quantizer(spec);
          const bool representable = input.representable(method.name, spec);
          const QuantContext context{5, role, 0, 0};
          EncodedTensor encoded;
          try {
            encoded = quantizer->encode(kTokens, kDim, input.x.data(), context);
          } catch (const InputError& error) {
            EXPECT_FALSE(representable) << "refused data the format represents: " << error.what();
            continue;
          }
          // What encode wrote, decode must take: no exception here.
          std::vector<float> decoded(input.x.size());
          quantizer->decode(encoded, context, decoded.data());
          for (float value : decoded) ASSERT_TRUE(std::isfinite(value)) << value;
          const double error = testing::relative_mse(input.x, decoded);
          EXPECT_LE(error, representable ? family_bound(method.name, spec) : kZeroBound);
          representable_cases += representable;
          if (std::getenv("TQLAB_PRINT_ERRORS") != nullptr) {
            std::printf("%-22s %-28s %-5s %.4g%s\n", input.name.c_str(), spec.c_str(), role_name(role), error,
                        representable ? "" : " (not representable)");
          }
        }
      }
    }
  }
  EXPECT_GE(representable_cases, 60) << "the test must exercise data the formats represent";
}

}  // namespace
}  // namespace tqlab
