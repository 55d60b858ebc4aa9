// The QJL sketch's fast forms (quant/qjl.h) against their references, on every
// kernel form this CPU runs: sketch's float projections with their certified
// signs must give sketch_reference's bits, including residuals built to sit on
// a row's zero crossing (where a float sign and a double sign can differ),
// residuals that underflow or overflow in float, and NaN; add_estimate must
// give add_estimate_reference's floats bit for bit, on the sizes where the
// SIMD forms switch from tiles to single registers to scalar tails.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/kernel_set.h"
#include "core/rng.h"
#include "quant/qjl.h"
#include "quant/tq_kernels.h"

namespace tqlab {
namespace {

struct Shape {
  int dim;
  int projections;
};
// Tiles of 8 registers (64 / 128 floats), single registers, scalar tails.
constexpr Shape kShapes[] = {{128, 128}, {128, 64}, {64, 200}, {130, 129}, {7, 5}, {1, 1}, {256, 17}, {33, 300}};

std::vector<float> gaussian_vector(Rng& rng, int n, double scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& value : v) value = static_cast<float>(rng.gaussian() * scale);
  return v;
}

// v minus its projection on row `row` of S (in double, then rounded): S_row . r is
// within rounding of zero, the case a float sketch alone could get wrong.
std::vector<float> on_zero_crossing(const QjlSketch& sketch, int row, Rng& rng) {
  const int dim = sketch.dim();
  const float* s = sketch.matrix().data() + static_cast<std::size_t>(row) * dim;
  const std::vector<float> v = gaussian_vector(rng, dim, 1.0);
  double dot = 0, squares = 0;
  for (int j = 0; j < dim; ++j) {
    dot += static_cast<double>(s[j]) * v[j];
    squares += static_cast<double>(s[j]) * s[j];
  }
  std::vector<float> r(static_cast<std::size_t>(dim));
  for (int j = 0; j < dim; ++j) r[j] = static_cast<float>(v[j] - dot / squares * s[j]);
  return r;
}

std::vector<std::vector<float>> residuals_for(const QjlSketch& sketch, Rng& rng) {
  const int dim = sketch.dim();
  std::vector<std::vector<float>> residuals;
  for (double scale : {1.0, 1e-3, 1e-41 /* subnormal */, 1e-25 /* squares underflow in float */, 1e35 /* overflow */}) {
    for (int k = 0; k < 4; ++k) residuals.push_back(gaussian_vector(rng, dim, scale));
  }
  for (int row = 0; row < sketch.projections(); ++row) residuals.push_back(on_zero_crossing(sketch, row, rng));
  residuals.emplace_back(static_cast<std::size_t>(dim), 0.0f);
  std::vector<float> with_nan = gaussian_vector(rng, dim, 1.0);
  with_nan[static_cast<std::size_t>(dim / 2)] = std::numeric_limits<float>::quiet_NaN();
  residuals.push_back(with_nan);
  std::vector<float> with_inf = gaussian_vector(rng, dim, 1.0);
  with_inf[0] = std::numeric_limits<float>::infinity();
  residuals.push_back(with_inf);
  return residuals;
}

std::string form_and_shape(KernelSet set, const Shape& shape) {
  return std::string(kernel_set_name(set)) + ", dim " + std::to_string(shape.dim) + ", m " +
         std::to_string(shape.projections);
}

TEST(QjlSketchTest, SketchGivesTheReferencesSignsOnEveryForm) {
  for (const Shape& shape : kShapes) {
    const QjlSketch sketch(shape.dim, shape.projections, 11);
    Rng rng(12);
    const auto m = static_cast<std::size_t>(shape.projections);
    for (const std::vector<float>& r : residuals_for(sketch, rng)) {
      std::vector<std::uint8_t> expected(m);
      sketch.sketch_reference(r.data(), expected.data());
      for (KernelSet set : supported_kernel_sets()) {
        ScopedKernelSet use(set);
        std::vector<std::uint8_t> signs(m, 7);
        sketch.sketch(r.data(), signs.data());
        ASSERT_EQ(signs, expected) << form_and_shape(set, shape) << ", residual[0] " << r[0];
      }
    }
  }
}

TEST(QjlSketchTest, AddEstimateIsTheReferenceBitForBitOnEveryForm) {
  for (const Shape& shape : kShapes) {
    const QjlSketch sketch(shape.dim, shape.projections, 21);
    Rng rng(22);
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<std::uint8_t> signs(static_cast<std::size_t>(shape.projections));
      for (std::uint8_t& sign : signs) sign = static_cast<std::uint8_t>(rng.next_u64() & 1);
      const std::vector<float> start = gaussian_vector(rng, shape.dim, 0.1);
      const float residual_norm = trial == 0 ? 0.0f : static_cast<float>(rng.uniform() * 2);
      std::vector<float> expected = start;
      sketch.add_estimate_reference(signs.data(), residual_norm, expected.data());
      for (KernelSet set : supported_kernel_sets()) {
        ScopedKernelSet use(set);
        std::vector<float> out = start;
        sketch.add_estimate(signs.data(), residual_norm, out.data());
        ASSERT_EQ(0, std::memcmp(out.data(), expected.data(), sizeof(float) * out.size()))
            << form_and_shape(set, shape) << ", trial " << trial;
      }
    }
  }
}

// Batches: every vector of a batch (4-vector groups on AVX-512, pairs on AVX2,
// then single tails) gets the bits it gets alone.
TEST(QjlSketchTest, BatchesGiveEachVectorItsOwnBits) {
  for (const Shape& shape : {Shape{128, 128}, Shape{33, 70}}) {
    const QjlSketch sketch(shape.dim, shape.projections, 31);
    const auto dim = static_cast<std::size_t>(shape.dim);
    const auto m = static_cast<std::size_t>(shape.projections);
    Rng rng(32);
    for (int n : {1, 2, 3, 4, 5, 7, 9}) {
      std::vector<float> residuals;
      for (int v = 0; v < n; ++v) {
        const std::vector<float> r =
            v % 3 == 2 ? on_zero_crossing(sketch, v, rng) : gaussian_vector(rng, shape.dim, 1.0);
        residuals.insert(residuals.end(), r.begin(), r.end());
      }
      std::vector<std::uint8_t> expected(n * m);
      for (int v = 0; v < n; ++v) sketch.sketch_reference(residuals.data() + v * dim, expected.data() + v * m);
      constexpr std::size_t kPad = 3;  // out rows dim + 3 apart
      std::vector<float> start((dim + kPad) * n);
      for (float& value : start) value = static_cast<float>(rng.gaussian());
      std::vector<float> norms(static_cast<std::size_t>(n));
      for (float& norm : norms) norm = static_cast<float>(rng.uniform());
      std::vector<float> expected_out = start;
      for (int v = 0; v < n; ++v) {
        sketch.add_estimate_reference(expected.data() + v * m, norms[v], expected_out.data() + v * (dim + kPad));
      }
      for (KernelSet set : supported_kernel_sets()) {
        ScopedKernelSet use(set);
        std::vector<std::uint8_t> signs(n * m, 7);
        sketch.sketch(n, residuals.data(), signs.data());
        ASSERT_EQ(signs, expected) << form_and_shape(set, shape) << ", " << n << " vectors";
        // ... and with the norms given, as the quantizer gives them.
        std::vector<float> residual_norms(static_cast<std::size_t>(n));
        row_norms(n, shape.dim, shape.dim, residuals.data(), residual_norms.data());
        std::fill(signs.begin(), signs.end(), 7);
        sketch.sketch(n, residuals.data(), residual_norms.data(), signs.data());
        ASSERT_EQ(signs, expected) << form_and_shape(set, shape) << ", " << n << " vectors, norms given";
        std::vector<float> out = start;
        sketch.add_estimate(n, expected.data(), norms.data(), out.data(), static_cast<std::int64_t>(dim + kPad));
        ASSERT_EQ(0, std::memcmp(out.data(), expected_out.data(), sizeof(float) * out.size()))
            << form_and_shape(set, shape) << ", " << n << " vectors";
      }
    }
  }
}

}  // namespace
}  // namespace tqlab
