// Runtime kernel dispatch (core/kernel_set.h): every instruction-set form this
// CPU can run gives the same bytes and floats as the portable form, kernel by
// kernel and through whole quantizers, on the sizes where the SIMD forms
// switch paths (register / memory transforms, tiles and edges, 4 / 16 rows,
// 8 / 32 values, unaligned bit offsets, values on decision boundaries).
// A form the CPU lacks is reported, not tested.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "bucketizing_values.h"
#include "core/bit_pack.h"
#include "core/kernel_set.h"
#include "core/rng.h"
#include "quant/codebook.h"
#include "quant/registry.h"
#include "quant/rotation.h"
#include "quant/tq_kernels.h"
#include "test_support.h"

namespace tqlab {
namespace {

using tqlab::testing::bucketizing_values;

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits(values.size());
  if (!values.empty()) std::memcpy(bits.data(), values.data(), sizeof(float) * values.size());  // no null to memcpy
  return bits;
}

// The forms to hold against the portable one: every SIMD form this CPU runs.
std::vector<KernelSet> simd_sets() {
  std::vector<KernelSet> sets;
  for (KernelSet set : supported_kernel_sets()) {
    if (set != KernelSet::portable) sets.push_back(set);
  }
  return sets;
}

// Runs `compute` once with the portable form and once with each SIMD form;
// each result must equal the portable one.
template <typename Result, typename Compute>
void expect_every_form_agrees(const Compute& compute, const std::string& what) {
  Result portable;
  {
    ScopedKernelSet use(KernelSet::portable);
    portable = compute();
  }
  for (KernelSet set : simd_sets()) {
    ScopedKernelSet use(set);
    const Result fast = compute();
    ASSERT_EQ(fast, portable) << what << ": the " << kernel_set_name(set) << " form differs from the portable one";
  }
}

// Gaussian values scaled over many binades.
std::vector<float> test_values(std::size_t count, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values(count);
  for (float& v : values)
    v = static_cast<float>(rng.gaussian() * std::ldexp(1.0, static_cast<int>(rng.uniform() * 40) - 20));
  return values;
}

// Every distribution and width at block sizes from tiny (far from Gaussian) to a head dim.
std::vector<const Codebook*> all_codebooks() {
  std::vector<const Codebook*> codebooks;
  for (CodebookDistribution distribution :
       {CodebookDistribution::beta, CodebookDistribution::gauss, CodebookDistribution::uniform}) {
    for (int dim : {4, 32, 128}) {
      for (int bits = 1; bits <= 8; ++bits) codebooks.push_back(&lloyd_max_codebook(dim, bits, distribution));
    }
  }
  return codebooks;
}

// ctest's kernels.* runs force a form with TQLAB_KERNELS; on a CPU that lacks
// it the whole run is skipped (exit 77) instead of failing at the first kernel.
class ForcedKernelsEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* forced = std::getenv("TQLAB_KERNELS");
    if (forced == nullptr) return;
    const std::optional<KernelSet> set = parse_kernel_set(forced);
    if (set && !cpu_supports(*set)) {
      std::cout << "TQLAB_KERNELS=" << forced << ": this CPU cannot run that form; skipped\n";
      std::exit(77);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const forced_kernels_environment =
    ::testing::AddGlobalTestEnvironment(new ForcedKernelsEnvironment);

TEST(KernelSetTest, NamesRoundTripAndPortableIsAlwaysThere) {
  for (KernelSet set : {KernelSet::portable, KernelSet::avx2, KernelSet::avx512}) {
    EXPECT_EQ(parse_kernel_set(kernel_set_name(set)), set);
  }
  EXPECT_FALSE(parse_kernel_set("sse2").has_value());
  EXPECT_TRUE(cpu_supports(KernelSet::portable));
  const std::vector<KernelSet> supported = supported_kernel_sets();
  ASSERT_FALSE(supported.empty());
  EXPECT_EQ(supported.front(), KernelSet::portable);
  // AVX-512 forms fall back to AVX2 ones where AVX-512 does not pay: they need both.
  if (cpu_supports(KernelSet::avx512)) {
    EXPECT_TRUE(cpu_supports(KernelSet::avx2));
  }
  std::string names;
  for (KernelSet set : supported) names += std::string(kernel_set_name(set)) + " ";
  std::cout << "kernel forms this CPU runs: " << names << "\n";
}

TEST(KernelSetTest, TheWidestFormRunsUnlessTheEnvironmentForcesOne) {
  const char* forced = std::getenv("TQLAB_KERNELS");
  const KernelSet expected = (forced != nullptr && std::string(forced) != "auto" && *forced != '\0')
                                 ? *parse_kernel_set(forced)
                                 : supported_kernel_sets().back();
  EXPECT_EQ(active_kernel_set(), expected);
  {
    ScopedKernelSet use(KernelSet::portable);
    EXPECT_EQ(active_kernel_set(), KernelSet::portable);
  }
  EXPECT_EQ(active_kernel_set(), expected);
}

TEST(KernelSetTest, FormsTheCpuLacksAreRefused) {
  for (KernelSet set : {KernelSet::avx2, KernelSet::avx512}) {
    if (cpu_supports(set)) continue;
    const std::string message = testing::input_error_message([&] { use_kernel_set(set); });
    EXPECT_NE(message.find(std::string(kernel_set_name(set))), std::string::npos) << message;
  }
}

TEST(KernelDispatchTest, RowNormsAgree) {
  for (int width : {1, 2, 3, 4, 5, 8, 12, 32, 96, 128, 130, 256}) {
    for (std::int64_t rows : {1, 3, 4, 5, 15, 16, 17, 37}) {
      for (std::int64_t padding : {0, 3}) {
        const std::int64_t stride = width + padding;
        const auto x = test_values(static_cast<std::size_t>(rows * stride), 100 + width + rows);
        expect_every_form_agrees<std::vector<std::uint32_t>>(
            [&] {
              std::vector<float> norms(static_cast<std::size_t>(rows));
              row_norms(rows, width, stride, x.data(), norms.data());
              return bits_of(norms);
            },
            "row_norms width " + std::to_string(width) + " rows " + std::to_string(rows));
        // ... and the portable form is the reference.
        std::vector<float> portable(static_cast<std::size_t>(rows)), reference(portable.size());
        {
          ScopedKernelSet use(KernelSet::portable);
          row_norms(rows, width, stride, x.data(), portable.data());
        }
        row_norms_reference(rows, width, stride, x.data(), reference.data());
        ASSERT_EQ(bits_of(portable), bits_of(reference));
      }
    }
  }
}

TEST(KernelDispatchTest, QuantizeToCodesAgree) {
  for (const Codebook* codebook : all_codebooks()) {
    const auto y = bucketizing_values(*codebook, 7);
    expect_every_form_agrees<std::vector<std::uint8_t>>(
        [&] {
          std::vector<std::uint8_t> codes(y.size());
          quantize_to_codes(static_cast<int>(y.size()), y.data(), *codebook, codes.data());
          return codes;
        },
        "quantize_to_codes b=" + std::to_string(codebook->bits) + " d=" + std::to_string(codebook->dim));
  }
}

// Codebooks no registry builds, for the bucketizers' choice of method: the
// AVX2 form counts boundaries when they are symmetric about 0 and walks the
// search tree otherwise. Symmetric ones (one with a -0 middle), one broken by
// a single ulp, one with a middle that is not 0, one with repeated boundaries:
// every form must give the definition's codes.
TEST(KernelDispatchTest, QuantizeToCodesAgreeOnHandBuiltCodebooks) {
  for (int bits = 1; bits <= 4; ++bits) {
    const Codebook& built = lloyd_max_codebook(32, bits, CodebookDistribution::beta);
    const std::size_t middle = built.boundaries_f.size() / 2;
    std::vector<std::pair<std::string, Codebook>> cases;
    cases.emplace_back("symmetric", built);
    cases.emplace_back("symmetric, -0 middle", built);
    cases.back().second.boundaries_f[middle] = -0.0f;
    cases.emplace_back("one ulp off symmetric", built);
    cases.back().second.boundaries_f.back() = std::nextafter(built.boundaries_f.back(), 2.0f);
    cases.emplace_back("middle not 0", built);
    cases.back().second.boundaries_f[middle] = 1e-3f;
    if (bits >= 3) {
      cases.emplace_back("repeated boundaries", built);
      Codebook& repeated = cases.back().second;
      repeated.boundaries_f[middle + 1] = repeated.boundaries_f[middle + 2];
      repeated.boundaries_f[middle - 1] = repeated.boundaries_f[middle - 2];
    }
    for (const auto& [name, codebook] : cases) {
      const auto y = bucketizing_values(codebook, 5);
      const int n = static_cast<int>(y.size());
      std::vector<std::uint8_t> expected(y.size());
      quantize_to_codes_reference(n, y.data(), codebook, expected.data());
      for (KernelSet set : supported_kernel_sets()) {
        ScopedKernelSet use(set);
        std::vector<std::uint8_t> codes(y.size());
        quantize_to_codes(n, y.data(), codebook, codes.data());
        for (std::size_t i = 0; i < y.size(); ++i) {
          ASSERT_EQ(codes[i], expected[i])
              << name << " b=" << bits << " y=" << y[i] << " (" << kernel_set_name(set) << " form)";
        }
      }
    }
  }
}

// Buffers whose bits outside the target range are ones (other sections' data).
TEST(KernelDispatchTest, QuantizeAndPackAgree) {
  for (const Codebook* codebook : all_codebooks()) {
    if (codebook->dim != 128) continue;
    const int bits = codebook->bits;
    const auto all = bucketizing_values(*codebook, 11);
    for (std::size_t count : {0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 128, 203, 300}) {
      if (count > all.size()) continue;
      for (std::uint64_t bit_offset : {0, 8, 24, 3, 13}) {
        const std::uint64_t end_bit = bit_offset + count * static_cast<std::uint64_t>(bits);
        std::vector<std::uint8_t> before(packed_bytes(end_bit + 11, 1), 0xFF);
        for (std::uint64_t bit = bit_offset; bit < end_bit; ++bit)
          before[bit / 8] &= static_cast<std::uint8_t>(~(1u << (bit % 8)));
        expect_every_form_agrees<std::vector<std::uint8_t>>(
            [&] {
              auto packed = before;
              quantize_and_pack(count, all.data(), *codebook, packed.data(), bit_offset);
              return packed;
            },
            "quantize_and_pack b=" + std::to_string(bits) + " count " + std::to_string(count) + " offset " +
                std::to_string(bit_offset) + " dist " +
                std::string(codebook_distribution_name(codebook->distribution)));
      }
    }
  }
}

TEST(KernelDispatchTest, UnpackAndDequantizeAgree) {
  Rng rng(5);
  for (const Codebook* codebook : all_codebooks()) {
    if (codebook->dim != 32 || codebook->distribution != CodebookDistribution::beta) continue;
    const int bits = codebook->bits;
    for (std::size_t count : {0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 128, 300}) {
      for (std::uint64_t bit_offset : {0, 8, 40, 5, 14}) {
        // Exactly the stream's bytes, so that any read past them is an error under ASan.
        std::vector<std::uint8_t> stream(packed_bytes(bit_offset + count * static_cast<std::uint64_t>(bits), 1));
        for (auto& byte : stream) byte = static_cast<std::uint8_t>(rng.next_u64());
        expect_every_form_agrees<std::vector<std::uint32_t>>(
            [&] {
              std::vector<float> y(count);
              unpack_and_dequantize(count, stream.data(), bit_offset, *codebook, y.data());
              return bits_of(y);
            },
            "unpack_and_dequantize b=" + std::to_string(bits) + " count " + std::to_string(count) + " offset " +
                std::to_string(bit_offset));
      }
    }
  }
}

TEST(KernelDispatchTest, FwhtAgrees) {
  for (int log_n = 0; log_n <= 13; ++log_n) {
    const auto x = test_values(std::size_t{1} << log_n, 40 + static_cast<std::uint64_t>(log_n));
    expect_every_form_agrees<std::vector<std::uint32_t>>(
        [&] {
          auto y = x;
          fwht_normalized(y.data(), log_n);
          return bits_of(y);
        },
        "fwht_normalized log_n " + std::to_string(log_n));
    auto portable = x;
    fwht_normalized_portable(portable.data(), log_n);
    ScopedKernelSet use(KernelSet::portable);
    auto dispatched = x;
    fwht_normalized(dispatched.data(), log_n);
    ASSERT_EQ(bits_of(dispatched), bits_of(portable));
  }
}

// Forward and inverse, out of place and in place, of every kind at the sizes
// where the forms switch paths: Hadamard in registers (8..128) and in memory,
// Haar tiles of 4 vectors x 16 outputs and their edges.
TEST(KernelDispatchTest, RotationsAgree) {
  struct Case {
    RotationKind kind;
    int dim;
  };
  std::vector<Case> cases;
  for (int dim : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 2048}) cases.push_back({RotationKind::hadamard, dim});
  for (int dim : {1, 3, 15, 16, 17, 33, 96, 128, 130}) cases.push_back({RotationKind::haar, dim});
  for (const Case& c : cases) {
    const auto rotation = Rotation::make(c.kind, c.dim, 99);
    for (std::int64_t n : {1, 3, 4, 5, 9}) {
      const auto x = test_values(static_cast<std::size_t>(n * c.dim), 3 + static_cast<std::uint64_t>(c.dim + n));
      expect_every_form_agrees<std::vector<std::uint32_t>>(
          [&] {
            std::vector<float> forward(x.size()), inverse(x.size());
            rotation->forward(n, x.data(), forward.data());
            rotation->inverse(n, x.data(), inverse.data());
            auto in_place = x;
            rotation->forward(n, in_place.data(), in_place.data());
            rotation->inverse(n, in_place.data(), in_place.data());
            // The fused forms with row scales, the input read with a stride
            // and the output written with one.
            std::vector<float> scales(static_cast<std::size_t>(n));
            for (std::size_t r = 0; r < scales.size(); ++r) scales[r] = 0.75f - 0.5f * static_cast<float>(r);
            const std::int64_t stride = c.dim + 3;
            std::vector<float> strided(static_cast<std::size_t>(n * stride), 5.0f);
            std::vector<float> scaled_forward(x.size());
            rotation->forward_scaled(n / 2 + 1, x.data(), c.dim / 2 + c.dim, scales.data(), scaled_forward.data());
            const bool finite = rotation->inverse_scaled(n, x.data(), scales.data(), strided.data(), stride);
            // A row scale that overflows some results to infinity: the same
            // verdict and the same infinities on every form.
            auto huge_scales = scales;
            huge_scales[0] = 3e38f;
            std::vector<float> overflowed(x.size());
            const bool overflow_finite =
                rotation->inverse_scaled(n, x.data(), huge_scales.data(), overflowed.data(), c.dim);
            auto all = forward;
            all.insert(all.end(), overflowed.begin(), overflowed.end());
            all.push_back(overflow_finite ? 1.0f : 0.0f);
            all.insert(all.end(), inverse.begin(), inverse.end());
            all.insert(all.end(), in_place.begin(), in_place.end());
            all.insert(all.end(), scaled_forward.begin(), scaled_forward.end());
            all.insert(all.end(), strided.begin(), strided.end());
            all.push_back(finite ? 1.0f : 0.0f);
            return bits_of(all);
          },
          std::string(rotation_kind_name(c.kind)) + " dim " + std::to_string(c.dim) + " n " + std::to_string(n));
    }
  }
}

// Whole quantizers: every registry example spec, and tq at head dims that take
// each rotation path, on KV-like rows (outlier channels, a zero row, tiny and
// large norms): the encoded bytes and the decoded floats.
TEST(KernelDispatchTest, EveryQuantizerEncodesAndDecodesTheSameBytes) {
  std::vector<std::string> specs;
  for (const MethodInfo& method : quantizer_methods()) {
    for (const std::string& spec : method.example_specs) specs.push_back(spec);
  }
  for (const char* spec : {"tq:b=1", "tq:b=2", "tq:b=3", "tq:b=4", "tq:b=5", "tq:b=6", "tq:b=7", "tq:b=8",
                           "tq:b=4,rot=haar", "tq:b=3,qjl=prod", "tq:b=4,block=8", "tq:b=2,outliers=8@3"}) {
    specs.emplace_back(spec);
  }
  for (const std::string& spec : specs) {
    for (int dim : {64, 96, 128, 256}) {
      const auto quantizer = make_quantizer(spec);
      try {
        quantizer->check_dim(dim);
      } catch (const InputError&) {
        continue;  // e.g. q4_0 at a head dim that is not a multiple of 32
      }
      const std::int64_t tokens = 70;
      Rng rng(static_cast<std::uint64_t>(dim));
      std::vector<float> x(static_cast<std::size_t>(tokens * dim));
      for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>(rng.gaussian() + ((i % static_cast<std::size_t>(dim)) % 17 == 3 ? 4.0 : 0.0));
      }
      std::fill(x.begin() + dim, x.begin() + 2 * dim, 0.0f);
      for (int c = 0; c < dim; ++c) x[static_cast<std::size_t>(2 * dim + c)] *= 1e-6f;
      for (int c = 0; c < dim; ++c) x[static_cast<std::size_t>(3 * dim + c)] *= 300.0f;
      const QuantContext context{7, Role::key, 1, 0};
      expect_every_form_agrees<std::pair<std::vector<std::uint8_t>, std::vector<std::uint32_t>>>(
          [&] {
            const testing::RoundTrip result = testing::round_trip(*quantizer, tokens, dim, x, context);
            return std::make_pair(result.encoded.bytes, bits_of(result.decoded));
          },
          spec + " dim " + std::to_string(dim));
    }
  }
}

}  // namespace
}  // namespace tqlab
