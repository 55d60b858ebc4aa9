#include "quant/qjl.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

#include "core/kernel_set.h"
#include "core/rng.h"
#include "quant/qjl_certify.h"
#include "quant/qjl_simd.h"

namespace tqlab {
namespace {

// Why a float sign can stand for the reference's double one. Let e be the
// exact S_i . r, A = sum_j |S_ij r_j| <= ||S_i|| ||r|| (Cauchy–Schwarz), n =
// dim. Any float evaluation p of the dot product, in any order, by fused or
// separate multiply and add (at most 2n roundings on any term's path), has
// |p - e| <= gamma(2n) A + n 2^-149 (gamma(k) = k u / (1 - k u), u = 2^-24;
// Higham, "Accuracy and Stability of Numerical Algorithms", 2002, §3.1; the
// last term covers products that underflow). The reference's double sum d has
// |d - e| <= gamma_double(n) A (products of floats are exact in double and
// never underflow). So when |p| > (gamma(2n) + gamma_double(n)) A + n 2^-149,
// e, d and p share one sign and d != 0: the reference's `d >= 0` is `p > 0`.
// The margin below is twice that bound (||S_i|| and ||r|| are themselves
// rounded); a NaN or infinite p, r or bound fails the test and takes the
// reference's path, as does any row within the margin (a few in ten
// thousand for Gaussian rows).
constexpr double kUnitRoundoffFloat = 0x1p-24;
constexpr double kUnitRoundoffDouble = 0x1p-53;
constexpr double kSmallestSubnormalFloat = 0x1p-149;
// Above this the gamma bounds lose meaning; every row then takes the double path.
constexpr int kMaxCertifiedDim = 1 << 20;

double gamma(double terms, double unit_roundoff) { return terms * unit_roundoff / (1.0 - terms * unit_roundoff); }

double double_dot(int dim, const float* row, const float* residual) {
  double projection = 0.0;
  for (int j = 0; j < dim; ++j) projection += static_cast<double>(row[j]) * residual[j];
  return projection;
}

// The panel layout of qjl_simd.h: kQjlPanel columns of a rows x cols matrix
// at a time, each panel row by row. element(r, c) gives the matrix's entries.
template <typename Element>
std::vector<float> to_panels(int rows, int cols, Element element) {
  std::vector<float> panels(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  float* at = panels.data();
  for (int first = 0; first < cols; first += simd::kQjlPanel) {
    const int width = std::min(simd::kQjlPanel, cols - first);
    for (int r = 0; r < rows; ++r) {
      for (int c = first; c < first + width; ++c) *at++ = element(r, c);
    }
  }
  return panels;
}

// The plain form of the float projections, a panel of S^T at a time for all
// vectors (it stays in L1; GCC vectorizes across its columns).
void project_portable(std::int64_t n, int dim, int m, const float* panels, const float* residuals,
                      float* projections) {
  for (int first = 0; first < m; first += simd::kQjlPanel) {
    const int width = std::min(simd::kQjlPanel, m - first);
    const float* panel = panels + static_cast<std::size_t>(first) * static_cast<std::size_t>(dim);
    for (std::int64_t v = 0; v < n; ++v) {
      const float* residual = residuals + v * dim;
      float* sums = projections + v * m + first;
      for (int c = 0; c < width; ++c) sums[c] = 0.0f;
      for (int j = 0; j < dim; ++j) {
        const float r = residual[j];
        const float* column = panel + static_cast<std::size_t>(j) * static_cast<std::size_t>(width);
        for (int c = 0; c < width; ++c) sums[c] += column[c] * r;
      }
    }
  }
}

void project(std::int64_t n, int dim, int m, const float* panels, const float* residuals, float* projections) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::qjl_project_avx512(n, dim, m, panels, residuals, projections);
    case KernelSet::avx2: return simd::qjl_project_avx2(n, dim, m, panels, residuals, projections);
#endif
    default: return project_portable(n, dim, m, panels, residuals, projections);
  }
}

// out[j] += signed_scales[i] * S_ij, rows in order: the reference's arithmetic
// (a panel of S at a time, for all vectors, changes no channel's order).
void add_signed_rows_portable(std::int64_t n, int dim, int m, const float* panels, const float* signed_scales,
                              float* out, std::int64_t out_stride) {
  for (int first = 0; first < dim; first += simd::kQjlPanel) {
    const int width = std::min(simd::kQjlPanel, dim - first);
    const float* panel = panels + static_cast<std::size_t>(first) * static_cast<std::size_t>(m);
    for (std::int64_t v = 0; v < n; ++v) {
      float* row_out = out + v * out_stride + first;
      for (int i = 0; i < m; ++i) {
        const float* row = panel + static_cast<std::size_t>(i) * static_cast<std::size_t>(width);
        const float signed_scale = signed_scales[v * m + i];
        for (int c = 0; c < width; ++c) row_out[c] += signed_scale * row[c];
      }
    }
  }
}

void add_signed_rows(std::int64_t n, int dim, int m, const float* panels, const float* signed_scales, float* out,
                     std::int64_t out_stride) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::qjl_add_signed_rows_avx512(n, dim, m, panels, signed_scales, out, out_stride);
    case KernelSet::avx2: return simd::qjl_add_signed_rows_avx2(n, dim, m, panels, signed_scales, out, out_stride);
#endif
    default: return add_signed_rows_portable(n, dim, m, panels, signed_scales, out, out_stride);
  }
}

// signed_scales[v * m + i] = scales[v] for a sign 1, else -scales[v]: the
// sign bit flipped (float(-x) = -float(x), as the reference rounds its double
// -scale), set without a branch: random signs mispredict half the time.
void signed_scales_portable(std::int64_t n, int m, const std::uint8_t* signs, const float* scales,
                            float* signed_scales) {
  for (std::int64_t v = 0; v < n; ++v) {
    const auto scale_bits = std::bit_cast<std::uint32_t>(scales[v]);
    for (int i = 0; i < m; ++i) {
      signed_scales[v * m + i] =
          std::bit_cast<float>(scale_bits ^ (static_cast<std::uint32_t>(signs[v * m + i] == 0) << 31));
    }
  }
}

void make_signed_scales(std::int64_t n, int m, const std::uint8_t* signs, const float* scales, float* signed_scales) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512: return simd::qjl_signed_scales_avx512(n, m, signs, scales, signed_scales);
    case KernelSet::avx2: return simd::qjl_signed_scales_avx2(n, m, signs, scales, signed_scales);
#endif
    default: return signed_scales_portable(n, m, signs, scales, signed_scales);
  }
}

// Vectors per kernel call: enough that the kernels reuse each panel of the
// matrix they load into L1 many times, few enough to bound the scratch below.
constexpr std::int64_t kBatchVectors = 256;

// Per-thread buffers that keep their memory from call to call (allocating and
// zeroing 128 KiB per 256-vector call cost ~4% of a round trip). One per use,
// so that no two live buffers share one.
enum ScratchUse {
  kCellsScratch,     // n x m floats: projections, or signed scales
  kNormsScratch,     // n floats: residual norms, or scales
  kUncertainScratch  // n flags
};

template <typename T, ScratchUse use>
T* scratch(std::size_t count) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

// sqrt(pi/2) / m * ||r||, rounded to float once (as the reference's double
// `scale` is, sign by sign).
float estimate_scale(int projections, float residual_norm) {
  return static_cast<float>(std::sqrt(std::numbers::pi / 2.0) / projections * residual_norm);
}

}  // namespace

QjlSketch::QjlSketch(int dim, int projections, std::uint64_t seed)
    : dim_(dim), projections_(projections), matrix_(static_cast<std::size_t>(dim) * projections) {
  Rng rng(seed);
  for (float& entry : matrix_) entry = static_cast<float>(rng.gaussian());
  const auto m = static_cast<std::size_t>(projections);
  const auto n = static_cast<std::size_t>(dim);
  // S^T for the projections, S for the estimate, each in panels (qjl_simd.h).
  const auto entry_of = [&](int i, int j) {
    return matrix_[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(j)];
  };
  projection_panels_ = to_panels(dim, projections, [&](int j, int i) { return entry_of(i, j); });
  estimate_panels_ = to_panels(projections, dim, entry_of);
  margins_.resize(m);
  const double gamma_sum = gamma(2.0 * dim, kUnitRoundoffFloat) + gamma(dim, kUnitRoundoffDouble);
  for (std::size_t i = 0; i < m; ++i) {
    double squares = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      const float entry = matrix_[i * n + j];
      squares += static_cast<double>(entry) * entry;
    }
    // Rounded up to float (and 2^-20 more), so that the float margin is never below the bound.
    margins_[i] = static_cast<float>(2.0 * gamma_sum * std::sqrt(squares) * (1.0 + 0x1p-20));
  }
}

std::size_t QjlSketch::bytes() const {
  return (matrix_.size() + projection_panels_.size() + estimate_panels_.size() + margins_.size()) * sizeof(float);
}

void QjlSketch::sketch_reference(const float* residual, std::uint8_t* signs) const {
  for (int i = 0; i < projections_; ++i) {
    const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
    signs[i] = double_dot(dim_, row, residual) >= 0.0 ? 1 : 0;
  }
}

void QjlSketch::sketch(std::int64_t n, const float* residuals, const float* residual_norms, std::uint8_t* signs) const {
  if (n <= 0) return;
  if (dim_ > kMaxCertifiedDim) {
    for (std::int64_t v = 0; v < n; ++v) sketch_reference(residuals + v * dim_, signs + v * projections_);
    return;
  }
  const auto m = static_cast<std::size_t>(projections_);
  const auto dim = static_cast<std::size_t>(dim_);
  for (std::int64_t first = 0; first < n; first += kBatchVectors) {
    const std::int64_t count = std::min(kBatchVectors, n - first);
    const float* batch_residuals = residuals + first * dim_;
    std::uint8_t* batch_signs = signs + first * projections_;
    float* projections = scratch<float, kCellsScratch>(static_cast<std::size_t>(count) * m);
    project(count, dim_, projections_, projection_panels_.data(), batch_residuals, projections);
    // ||r|| in double: squares of floats neither overflow nor underflow there.
    // Four sums for speed; the margin does not depend on their order. The
    // margin's own roundings (relative 2^-24 each, the given norm's among
    // them) are covered by its factor 2; a product that underflows loses at
    // most 2^-149, covered by the underflow term; one that overflows (or a
    // NaN) makes every comparison false.
    const float* norms = residual_norms != nullptr ? residual_norms + first : nullptr;
    if (norms == nullptr) {
      float* computed = scratch<float, kNormsScratch>(static_cast<std::size_t>(count));
      for (std::int64_t v = 0; v < count; ++v) {
        const float* residual = batch_residuals + v * dim_;
        double squares[4] = {0.0, 0.0, 0.0, 0.0};
        std::size_t j = 0;
        for (; j + 4 <= dim; j += 4) {
          for (std::size_t k = 0; k < 4; ++k) squares[k] += static_cast<double>(residual[j + k]) * residual[j + k];
        }
        for (; j < dim; ++j) squares[0] += static_cast<double>(residual[j]) * residual[j];
        computed[v] = static_cast<float>(std::sqrt((squares[0] + squares[1]) + (squares[2] + squares[3])));
      }
      norms = computed;
    }
    const auto underflow_margin = static_cast<float>(2.0 * dim_ * kSmallestSubnormalFloat);
    std::uint8_t* uncertain = scratch<std::uint8_t, kUncertainScratch>(static_cast<std::size_t>(count));
    certify_signs(count, projections_, projections, margins_.data(), norms, underflow_margin, batch_signs, uncertain);
    // The rows the test left uncertain (a few in 10^4) take the reference's double dot product.
    for (std::int64_t v = 0; v < count; ++v) {
      if (uncertain[v] == 0) continue;
      const float* residual = batch_residuals + v * dim_;
      const float* row_projections = projections + v * projections_;
      for (std::size_t i = 0; i < m; ++i) {
        if (!(std::fabs(row_projections[i]) > margins_[i] * norms[v] + underflow_margin)) {
          batch_signs[v * projections_ + static_cast<std::int64_t>(i)] =
              double_dot(dim_, matrix_.data() + i * dim, residual) >= 0.0 ? 1 : 0;
        }
      }
    }
  }
}

void QjlSketch::add_estimate_reference(const std::uint8_t* signs, float residual_norm, float* out) const {
  const double scale = std::sqrt(std::numbers::pi / 2.0) / projections_ * residual_norm;
  for (int i = 0; i < projections_; ++i) {
    const float* row = matrix_.data() + static_cast<std::size_t>(i) * dim_;
    const float signed_scale = static_cast<float>(signs[i] ? scale : -scale);
    for (int j = 0; j < dim_; ++j) out[j] += signed_scale * row[j];
  }
}

void QjlSketch::add_estimate(std::int64_t n, const std::uint8_t* signs, const float* residual_norms, float* out,
                             std::int64_t out_stride) const {
  if (n <= 0) return;
  // +-scale per (row, sign), so that the kernels' inner loop only loads and broadcasts.
  for (std::int64_t first = 0; first < n; first += kBatchVectors) {
    const std::int64_t count = std::min(kBatchVectors, n - first);
    float* scales = scratch<float, kNormsScratch>(static_cast<std::size_t>(count));
    for (std::int64_t v = 0; v < count; ++v) scales[v] = estimate_scale(projections_, residual_norms[first + v]);
    float* signed_scales =
        scratch<float, kCellsScratch>(static_cast<std::size_t>(count) * static_cast<std::size_t>(projections_));
    make_signed_scales(count, projections_, signs + first * projections_, scales, signed_scales);
    add_signed_rows(count, dim_, projections_, estimate_panels_.data(), signed_scales, out + first * out_stride,
                    out_stride);
  }
}

}  // namespace tqlab
