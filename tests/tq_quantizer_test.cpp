// The tq quantizer: spec strings, packed sizes, round trips, and the
// mathematics it must obey (TurboQuant Theorems 1-2, the numpy reproduction).
#include <array>
#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rng.h"
#include "quant/codebook.h"
#include "quant/registry.h"
#include "quant/tq_quantizer.h"
#include "test_support.h"
#include "theory/bounds.h"

namespace tqlab {
namespace {

using testing::RoundTrip;
using testing::relative_mse;

std::vector<float> gaussian_tensor(std::int64_t tokens, int dim, std::uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> x(static_cast<std::size_t>(tokens * dim));
  for (float& v : x) v = scale * static_cast<float>(rng.gaussian());
  return x;
}

RoundTrip round_trip(const std::string& spec, std::int64_t tokens, int dim, const std::vector<float>& x,
                     std::uint64_t seed = 0) {
  return testing::round_trip(*make_quantizer(spec), tokens, dim, x, QuantContext{seed, Role::key, 0, 0});
}


TEST(TqSpecTest, CanonicalFormRoundTrips) {
  for (const char* spec : {"tq:b=4", "tq:b=3,block=32", "tq:b=2,rot=haar,cb=gauss", "tq:b=3,nc", "tq:b=2,debias",
                           "tq:b=3,qjl=prod,qjl_m=64,norm=fp32", "tq:b=3,center=channel,outliers=32@4",
                           "tq:b=1,qjl=prod", "tq:b=2,qjl=extra", "tq:b=3,block=64,norm=bf16,center=block"}) {
    EXPECT_EQ(make_quantizer(spec)->spec(), spec);
  }
  EXPECT_EQ(make_quantizer("tq:nc,block=32,b=3")->spec(), "tq:b=3,block=32,nc");
  EXPECT_EQ(make_quantizer("tq:b=3,norm=fp16,cb=beta")->spec(), "tq:b=3");
}

TEST(TqSpecTest, RejectsMeaninglessSpecs) {
  for (const char* spec : {"tq", "tq:b=0", "tq:b=9", "tq:b=3,nc,debias", "tq:b=3,debias,qjl=prod", "tq:b=3,qjl_m=8",
                           "tq:b=3,rot=fourier", "tq:b=3,wat", "tq:b=3,block=1", "tq:b=3,outliers=4",
                           "tq:b=3,outliers=4@9", "tq:b=3,block=32,outliers=4@4", "tq:b=3,nc=1", "tq:b",
                           "tq:b=3,,nc", "tq:b=3,b=4"}) {
    EXPECT_THROW(make_quantizer(spec), InputError) << spec;
  }
  try {
    make_quantizer("tq:b=3,nc,debias");
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("tq:b=3,nc,debias"), std::string::npos);
  }
}

TEST(TqSpecTest, BlockMustDivideTheHeadDim) {
  const auto quantizer = make_quantizer("tq:b=3,block=48");
  try {
    quantizer->check_dim(128);
    FAIL() << "48 does not divide 128";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("2, 4, 8, 16, 32, 64, 128"), std::string::npos) << error.what();
  }
  EXPECT_NO_THROW(quantizer->check_dim(96));
  EXPECT_THROW(make_quantizer("tq:b=3,rot=hadamard")->check_dim(96), InputError);
  EXPECT_NO_THROW(make_quantizer("tq:b=3")->check_dim(96));  // Haar by default
}

TEST(TqBitsTest, PackedSizesEqualHandValues) {
  const int tokens = 64;
  const auto x = gaussian_tensor(tokens, 128, 1);
  auto bits = [&](const std::string& spec) { return round_trip(spec, tokens, 128, x).encoded.bits_per_value(); };
  EXPECT_DOUBLE_EQ(bits("tq:b=3"), 3.125);               // 3 + 16/128
  EXPECT_DOUBLE_EQ(bits("tq:b=3,block=32"), 3.5);        // 3 + 16/32
  EXPECT_DOUBLE_EQ(bits("tq:b=4"), 4.125);
  EXPECT_DOUBLE_EQ(bits("tq:b=3,norm=fp32"), 3.25);      // 3 + 32/128
  EXPECT_DOUBLE_EQ(bits("tq:b=3,qjl=prod"), 3.25);       // 2 + 1 + (16 + 16)/128
  EXPECT_DOUBLE_EQ(bits("tq:b=3,qjl=extra"), 4.25);      // 3 + 1 + (16 + 16)/128
  EXPECT_DOUBLE_EQ(bits("tq:b=2,qjl=extra,qjl_m=64"), 2.75);  // 2 + 64/128 + 32/128
  EXPECT_DOUBLE_EQ(bits("tq:b=3,block=32,center=block"), 4.0);  // 3 + (16 + 16)/32
  EXPECT_DOUBLE_EQ(bits("tq:b=3,center=channel"), 3.125 + 16.0 / tokens);  // + 128 fp16 means / (64 * 128)
  // 8 outlier channels at 3 bits, 120 at 2: codes, two norms, and 8 uint16 indices per head.
  EXPECT_DOUBLE_EQ(bits("tq:b=2,outliers=8@3"), (8 * 3 + 120 * 2 + 32) / 128.0 + 16.0 * 8 / (128.0 * tokens));
  // Odd widths cross byte boundaries: 5 bits x 6 coordinates per token of dim 6.
  const auto small = gaussian_tensor(8, 6, 2);
  EXPECT_DOUBLE_EQ(round_trip("tq:b=5", 8, 6, small).encoded.bits_per_value(), 5.0 + 16.0 / 6);
}

TEST(TqRoundTripTest, ZeroVectorsAndBlocksStayZero) {
  std::vector<float> x(4 * 64, 0.0f);
  for (int c = 32; c < 64; ++c) x[64 + c] = 1.0f;  // token 1: first block zero, second not
  for (const char* spec : {"tq:b=3", "tq:b=3,block=32", "tq:b=3,nc", "tq:b=2,qjl=prod", "tq:b=2,debias",
                           "tq:b=3,center=block,block=32"}) {
    const RoundTrip result = round_trip(spec, 4, 64, x);
    for (int c = 0; c < 64; ++c) {
      ASSERT_EQ(result.decoded[static_cast<std::size_t>(c)], 0.0f) << spec;  // token 0: all zero
      ASSERT_TRUE(std::isfinite(result.decoded[static_cast<std::size_t>(64 + c)])) << spec;
    }
    if (std::string(spec).find("block=32") != std::string::npos) {
      for (int c = 0; c < 32; ++c) ASSERT_EQ(result.decoded[static_cast<std::size_t>(64 + c)], 0.0f) << spec;
    }
  }
}

TEST(TqRoundTripTest, NonFiniteInputIsAnErrorNamingWhere) {
  auto x = gaussian_tensor(4, 16, 3);
  x[2 * 16 + 5] = NAN;
  try {
    round_trip("tq:b=3", 4, 16, x);
    FAIL() << "NaN accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("token 2, channel 5"), std::string::npos) << error.what();
  }
}

TEST(TqRoundTripTest, DeterministicForASeedAndDecodableFromBytesAlone) {
  const auto x = gaussian_tensor(32, 64, 4);
  const RoundTrip a = round_trip("tq:b=3,qjl=prod", 32, 64, x, 11);
  const RoundTrip b = round_trip("tq:b=3,qjl=prod", 32, 64, x, 11);
  const RoundTrip c = round_trip("tq:b=3,qjl=prod", 32, 64, x, 12);
  EXPECT_EQ(a.encoded.bytes, b.encoded.bytes);
  EXPECT_NE(a.encoded.bytes, c.encoded.bytes);
  // A fresh quantizer decodes the bytes to the same values.
  const auto fresh = make_quantizer("tq:b=3,qjl=prod");
  std::vector<float> decoded(x.size());
  fresh->decode(a.encoded, QuantContext{11, Role::key, 0, 0}, decoded.data());
  EXPECT_EQ(decoded, a.decoded);
}

TEST(TqRoundTripTest, ErrorFallsAsBitsRise) {
  const auto x = gaussian_tensor(256, 128, 5);
  for (const char* options : {"", ",rot=haar", ",block=32", ",cb=gauss", ",cb=uniform", ",nc", ",rot=none"}) {
    double previous = INFINITY;
    for (int b = 1; b <= 8; ++b) {
      const double error = relative_mse(x, round_trip("tq:b=" + std::to_string(b) + options, 256, 128, x).decoded);
      EXPECT_LT(error, previous) << "b=" << b << options;
      previous = error;
    }
  }
}

// D_mse of whole unit vectors, measured through the real quantizer, equals the
// codebook's integral within Monte Carlo error and obeys Theorem 1.
TEST(TqMathTest, MeasuredDistortionMatchesTheCodebookAndTheorem1) {
  const int tokens = 4096;
  for (int dim : {8, 64, 128}) {
    for (int b = 1; b <= 4; ++b) {
      const auto quantizer = make_quantizer("tq:b=" + std::to_string(b) + ",rot=haar,norm=fp32");
      // Gaussian rows (uniform directions), all under one rotation.
      const Estimate measured = measure_quantizer_distortion(*quantizer, dim, tokens, tokens, 6);
      const double theory = lloyd_max_codebook(dim, b, CodebookDistribution::beta).d_mse();
      EXPECT_NEAR(measured.mean, theory, 4 * measured.standard_error + 1e-4) << "dim " << dim << " b " << b;
      const double lower = std::pow(4.0, -b), upper = std::sqrt(3.0) * std::numbers::pi / 2 * lower;
      EXPECT_GE(theory, lower) << dim << " " << b;
      EXPECT_LE(theory, upper) << dim << " " << b;
    }
  }
}

// A unit vector x and a unit y with <y, x> = rho, both drawn afresh per trial,
// quantized with a fresh seed per trial: the error of <y, x~> over trials.
InnerProductErrorStats inner_product_error(const std::string& spec, int dim, double rho, int trials) {
  return measure_quantizer_inner_product_error(*make_quantizer(spec), dim, rho, trials, 99);
}

TEST(TqMathTest, ProdAndDebiasAreUnbiasedWhilePlainShrinksByAlpha) {
  const int dim = 32, trials = 3000;
  for (double rho : {0.5, 0.9}) {
    for (int b : {1, 2, 3}) {
      const std::string bits = std::to_string(b);
      const Estimate plain = inner_product_error("tq:b=" + bits + ",rot=haar,norm=fp32", dim, rho, trials).error;
      const Estimate debiased =
          inner_product_error("tq:b=" + bits + ",rot=haar,debias,norm=fp32", dim, rho, trials).error;
      const Estimate prod =
          inner_product_error("tq:b=" + bits + ",rot=haar,qjl=prod,norm=fp32", dim, rho, trials).error;
      EXPECT_LT(std::fabs(debiased.mean), 4 * debiased.standard_error) << "debias b=" << b << " rho=" << rho;
      EXPECT_LT(std::fabs(prod.mean), 4 * prod.standard_error) << "prod b=" << b << " rho=" << rho;
      // The plain MSE quantizer's estimate is alpha * <y, x>: a bias of (alpha - 1) rho.
      const double alpha = lloyd_max_codebook(dim, b, CodebookDistribution::beta).alpha;
      EXPECT_NEAR(plain.mean, (alpha - 1) * rho, 4 * plain.standard_error) << "plain b=" << b << " rho=" << rho;
      EXPECT_GT(std::fabs(plain.mean), 6 * plain.standard_error) << "the bias must be visible: b=" << b;
    }
  }
}

// d * E[err^2] of the biased, debiased and prod estimators at d = 128,
// b = 1..4, <y, x> = 0, 0.5, 0.9 (the numpy reproduction's table), measured through the real
// quantizer, against the codebook-derived prediction: the same estimators in
// the rotated frame (theory/bounds.h, InnerProductSampler: a uniformly random
// pair quantized with the codebooks, exact in distribution for a Haar
// rotation; x is drawn afresh per trial, so Pi x is uniform for the default
// Hadamard rotation too). Compared by the z-score of the difference of the two
// means; |z| <= 4 over 36 cells fails by chance with probability ~0.2%.
TEST(TqMathSlowTest, InnerProductErrorMatchesTheCodebookPrediction) {
  const char* variants[] = {"", ",debias", ",qjl=prod"};  // biased, debiased, prod
  constexpr int kDim = 128;
  constexpr int kTrials = 1500;             // real quantizer, per cell
  constexpr int kPredictionSamples = 20000;  // rotated frame, per cell (O(d) each)
  constexpr double kZ = 4;
  int cells = 0;
  for (int b = 1; b <= 4; ++b) {
    InnerProductSampler sampler(kDim, b, kDim);
    for (double rho : {0.0, 0.5, 0.9}) {
      std::array<RunningStats, 3> predicted;
      Rng rng(derive_seed({77, static_cast<std::uint64_t>(b), static_cast<std::uint64_t>(rho * 10)}));
      for (int s = 0; s < kPredictionSamples; ++s) {
        const InnerProductSample sample = sampler.sample(rng, rho);
        for (std::size_t e = 0; e < 3; ++e) predicted[e].add(kDim * sample.error[e] * sample.error[e]);
      }
      for (InnerProductEstimator estimator : kInnerProductEstimators) {
        const auto v = static_cast<std::size_t>(estimator);
        const Estimate measured =
            inner_product_error("tq:b=" + std::to_string(b) + ",norm=fp32" + variants[v], kDim, rho, kTrials)
                .scaled_squared_error;
        const Estimate prediction = predicted[v].estimate();
        const double z =
            (measured.mean - prediction.mean) / std::hypot(measured.standard_error, prediction.standard_error);
        EXPECT_LT(std::fabs(z), kZ) << "b=" << b << " variant '" << variants[v] << "' rho=" << rho << ": measured "
                                    << measured.mean << " +- " << measured.standard_error << ", predicted "
                                    << prediction.mean << " +- " << prediction.standard_error;
        ++cells;
      }
    }
  }
  EXPECT_EQ(cells, 36);
}

}  // namespace
}  // namespace tqlab

namespace tqlab {
namespace {

TEST(TqSpecTest, DimDependentDefaultsResolveToOneName) {
  auto at = [](const char* spec, int dim) { return make_quantizer(spec)->spec_for_dim(dim); };
  EXPECT_EQ(at("tq:b=3", 128), "tq:b=3");
  EXPECT_EQ(at("tq:b=3,block=128", 128), "tq:b=3");
  EXPECT_EQ(at("tq:b=3,rot=hadamard", 128), "tq:b=3");
  EXPECT_EQ(at("tq:b=3,rot=haar", 96), "tq:b=3");
  EXPECT_EQ(at("tq:b=3,qjl=prod,qjl_m=128", 128), "tq:b=3,qjl=prod");
  EXPECT_EQ(at("tq:b=3,block=32,qjl=prod,qjl_m=32", 128), "tq:b=3,block=32,qjl=prod");
  // Options that differ from the defaults at this dim stay.
  EXPECT_EQ(at("tq:b=3,rot=haar", 128), "tq:b=3,rot=haar");
  EXPECT_EQ(at("tq:b=3,block=32", 128), "tq:b=3,block=32");
  EXPECT_EQ(at("tq:b=3,qjl=prod,qjl_m=64", 128), "tq:b=3,qjl=prod,qjl_m=64");
  EXPECT_EQ(at("tq:b=2,outliers=8@3,rot=haar", 128), "tq:b=2,rot=haar,outliers=8@3");  // 8 is a power of two
  EXPECT_EQ(at("q4_0", 128), "q4_0");
  // The resolved names pack the same bytes.
  std::vector<float> x(64 * 128);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  const QuantContext context{3, Role::key, 0, 0};
  EXPECT_EQ(make_quantizer("tq:b=3,block=128,rot=hadamard")->encode(64, 128, x.data(), context).bytes,
            make_quantizer("tq:b=3")->encode(64, 128, x.data(), context).bytes);
}

}  // namespace
}  // namespace tqlab

namespace tqlab {
namespace {

// check_dim is complete: wherever it accepts a head dim, encode succeeds on
// finite data (at D = 8192, outliers=32@3 passed check_dim, then
// encode failed naming rot=haar). Every tq example spec and variants that
// stress the dim checks, over dims from 1 to past the largest codebook.
// Dims above 256 are chosen so that no accepted spec builds a Haar matrix
// (O(B^3) to build: at 4097 outliers=8@3 is a Haar group of 4089, seconds of
// work); past 4096 every group of outliers= exceeds the largest codebook.
TEST(TqSpecTest, CheckDimPassesOnlyWhereEncodeSucceeds) {
  std::vector<std::string> specs;
  for (const MethodInfo& method : quantizer_methods()) {
    if (method.name == "tq") specs.insert(specs.end(), method.example_specs.begin(), method.example_specs.end());
  }
  for (const char* extra : {"tq:b=3,outliers=32@3", "tq:b=3,rot=hadamard,outliers=8@3", "tq:b=2,block=64",
                            "tq:b=2,block=16,rot=hadamard", "tq:b=3,rot=none,outliers=2@2", "tq:b=2,block=4096"}) {
    ASSERT_EQ(make_quantizer(extra)->spec(), extra) << "written canonically, as errors print it";
    specs.push_back(extra);
  }
  const int dims[] = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 31, 32, 33, 34, 40, 64, 66, 96, 127, 128, 130, 256,
                      4160, 5000, 8192, 8200};
  int accepted = 0, refused = 0;
  for (const std::string& spec : specs) {
    const auto quantizer = make_quantizer(spec);
    for (int dim : dims) {
      try {
        quantizer->check_dim(dim);
      } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find(spec), std::string::npos) << error.what();
        ++refused;
        continue;
      }
      ++accepted;
      const std::int64_t tokens = 2;
      const auto x = gaussian_tensor(tokens, dim, static_cast<std::uint64_t>(dim));
      EXPECT_NO_THROW(round_trip(spec, tokens, dim, x)) << spec << " at head dim " << dim;
    }
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 50);
}

TEST(TqSpecTest, CheckDimNamesWhatTheUserWrote) {
  const std::string message =
      testing::input_error_message([] { make_quantizer("tq:b=3,outliers=32@3")->check_dim(8192); });
  EXPECT_NE(message.find("groups of 8160 and 32"), std::string::npos) << message;
  EXPECT_NE(message.find("4096"), std::string::npos) << message;
  EXPECT_EQ(message.find("haar"), std::string::npos) << "the user never asked for Haar: " << message;
}

}  // namespace
}  // namespace tqlab

namespace tqlab {
namespace {

// debias is unbiased under Haar only (docs/ROTATIONS.md): any other rotation
// warns, once per resolved spec, and says to use rot=haar.
TEST(TqSpecTest, DebiasWithoutHaarWarnsOnce) {
  auto warnings_of = [](const std::string& spec, int dim, int calls) {
    ::testing::internal::CaptureStderr();
    for (int i = 0; i < calls; ++i) make_quantizer(spec)->check_dim(dim);
    return ::testing::internal::GetCapturedStderr();
  };
  // Specs used by no other test, so that no earlier warning hides this one.
  const std::string hadamard = warnings_of("tq:b=5,block=16,debias", 64, 3);
  EXPECT_NE(hadamard.find("rot=hadamard"), std::string::npos) << hadamard;
  EXPECT_NE(hadamard.find("rot=haar"), std::string::npos) << hadamard;
  EXPECT_EQ(hadamard.find("warn"), hadamard.rfind("warn")) << "warned more than once: " << hadamard;
  const std::string two_rounds = warnings_of("tq:b=5,block=16,rot=hadamard2,debias", 64, 1);
  EXPECT_NE(two_rounds.find("rot=hadamard2"), std::string::npos) << two_rounds;
  EXPECT_EQ(warnings_of("tq:b=5,block=16,rot=haar,debias", 64, 1), "");
  EXPECT_EQ(warnings_of("tq:b=5,debias", 96, 1), "") << "Haar is the default for a block of 96";
  EXPECT_EQ(warnings_of("tq:b=5,block=16", 64, 1), "") << "no debias, nothing to warn about";
  // tqlab list's help no longer promises unbiasedness for every rotation.
  for (const OptionDoc& option : tq_option_docs()) {
    if (option.name == "debias") {
      EXPECT_NE(option.summary.find("under rot=haar only"), std::string::npos) << option.summary;
    }
  }
}

}  // namespace
}  // namespace tqlab
