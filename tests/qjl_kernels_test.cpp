// The QJL sketch's inner kernels against their plain forms, on every kernel
// form this CPU runs (tests/qjl_test.cpp holds the whole sketch to its
// definition): certify_signs must make certify_signs_reference's decision for
// every row, including projections exactly on the margin and one float past
// it, NaN, infinities, signed zeros, and a NaN, infinite or zero norm; and
// batches longer than the sketch's internal batch must give each vector the
// bits it gets alone.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/kernel_set.h"
#include "core/rng.h"
#include "quant/qjl.h"
#include "quant/qjl_certify.h"

namespace tqlab {
namespace {

// The bound certify_signs compares |projection| with, rounded as there (the
// build has -ffp-contract=off: a product, then a sum).
float bound_of(float margin, float norm, float underflow_margin) { return margin * norm + underflow_margin; }

struct CertifyCase {
  std::vector<float> projections, margins, norms;
  float underflow_margin = 0;
};

// n vectors of m projections: Gaussian, and in most vectors one row set to a
// case where a wrong comparison shows (on the bound, one float past it, NaN, ...).
CertifyCase certify_case(std::int64_t n, int m, Rng& rng) {
  CertifyCase c;
  c.underflow_margin = static_cast<float>(2.0 * 128 * 0x1p-149);
  c.margins.resize(static_cast<std::size_t>(m));
  for (float& margin : c.margins) margin = static_cast<float>(1e-5 * (1.0 + rng.uniform()));
  c.norms.resize(static_cast<std::size_t>(n));
  c.projections.resize(static_cast<std::size_t>(n * m));
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t v = 0; v < n; ++v) {
    float& norm = c.norms[static_cast<std::size_t>(v)];
    norm = static_cast<float>(rng.uniform() * 2);
    if (v % 23 == 5) norm = 0.0f;
    if (v % 29 == 7) norm = inf;
    if (v % 31 == 9) norm = nan;
    for (int i = 0; i < m; ++i) c.projections[static_cast<std::size_t>(v * m + i)] = static_cast<float>(rng.gaussian());
    const int row = static_cast<int>(rng.next_u64() % static_cast<std::uint64_t>(m));
    float& p = c.projections[static_cast<std::size_t>(v * m + row)];
    const float bound = bound_of(c.margins[static_cast<std::size_t>(row)], norm, c.underflow_margin);
    switch (v % 12) {
      case 0: p = bound; break;                            // on the margin: uncertain
      case 1: p = -bound; break;
      case 2: p = std::nextafter(bound, inf); break;       // just past it: certain
      case 3: p = -std::nextafter(bound, inf); break;
      case 4: p = nan; break;
      case 5: p = inf; break;
      case 6: p = -inf; break;
      case 7: p = 0.0f; break;
      case 8: p = -0.0f; break;
      case 9: p = std::numeric_limits<float>::denorm_min(); break;
      default: break;                                      // Gaussian only: almost always certain
    }
  }
  return c;
}

TEST(QjlKernelsTest, CertifySignsDecidesAsTheReferenceOnEveryForm) {
  Rng rng(41);
  for (int m : {1, 7, 8, 9, 15, 16, 17, 33, 64, 128, 200}) {
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{5}, std::int64_t{97}}) {
      const CertifyCase c = certify_case(n, m, rng);
      const auto cells = static_cast<std::size_t>(n * m);
      std::vector<std::uint8_t> expected_signs(cells), expected_uncertain(static_cast<std::size_t>(n));
      certify_signs_reference(n, m, c.projections.data(), c.margins.data(), c.norms.data(), c.underflow_margin,
                              expected_signs.data(), expected_uncertain.data());
      int uncertain_vectors = 0;
      for (std::uint8_t flag : expected_uncertain) uncertain_vectors += flag;
      if (n == 97) {
        // The cases above must leave some vectors uncertain and some not, or the test proves little.
        ASSERT_GT(uncertain_vectors, 0);
        ASSERT_LT(uncertain_vectors, n);
      }
      for (KernelSet set : supported_kernel_sets()) {
        ScopedKernelSet use(set);
        std::vector<std::uint8_t> signs(cells, 7), uncertain(static_cast<std::size_t>(n), 7);
        certify_signs(n, m, c.projections.data(), c.margins.data(), c.norms.data(), c.underflow_margin, signs.data(),
                      uncertain.data());
        const std::string where = std::string(kernel_set_name(set)) + ", m " + std::to_string(m) + ", n " +
                                  std::to_string(n);
        ASSERT_EQ(signs, expected_signs) << where;
        ASSERT_EQ(uncertain, expected_uncertain) << where;
      }
    }
  }
}

// More vectors than one internal batch (256), with a row stride unlike dim:
// every vector's signs and estimate are the references', on every form.
TEST(QjlKernelsTest, LongBatchesGiveEachVectorTheReferencesBits) {
  for (const auto& [dim, m] : {std::pair{128, 128}, std::pair{33, 70}}) {
    const QjlSketch sketch(dim, m, 51);
    constexpr std::int64_t kVectors = 600;
    Rng rng(52);
    std::vector<float> residuals(static_cast<std::size_t>(kVectors * dim));
    for (float& value : residuals) value = static_cast<float>(rng.gaussian() * 0.03);
    std::vector<std::uint8_t> expected(static_cast<std::size_t>(kVectors * m));
    for (std::int64_t v = 0; v < kVectors; ++v) {
      sketch.sketch_reference(residuals.data() + v * dim, expected.data() + v * m);
    }
    const std::int64_t stride = dim + 5;
    std::vector<float> start(static_cast<std::size_t>(kVectors * stride));
    for (float& value : start) value = static_cast<float>(rng.gaussian());
    std::vector<float> norms(static_cast<std::size_t>(kVectors));
    for (float& norm : norms) norm = static_cast<float>(rng.uniform());
    std::vector<float> expected_out = start;
    for (std::int64_t v = 0; v < kVectors; ++v) {
      sketch.add_estimate_reference(expected.data() + v * m, norms[static_cast<std::size_t>(v)],
                                    expected_out.data() + v * stride);
    }
    for (KernelSet set : supported_kernel_sets()) {
      ScopedKernelSet use(set);
      const std::string where = std::string(kernel_set_name(set)) + ", dim " + std::to_string(dim);
      std::vector<std::uint8_t> signs(expected.size(), 7);
      sketch.sketch(kVectors, residuals.data(), signs.data());
      ASSERT_EQ(signs, expected) << where;
      std::vector<float> out = start;
      sketch.add_estimate(kVectors, expected.data(), norms.data(), out.data(), stride);
      ASSERT_EQ(0, std::memcmp(out.data(), expected_out.data(), sizeof(float) * out.size())) << where;
    }
  }
}

}  // namespace
}  // namespace tqlab
