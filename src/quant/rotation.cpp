// Random rotations: Walsh–Hadamard with random signs, Haar-random dense, identity.
//
// Sources: the perplexity study, step 2 ("rotate with a randomized Walsh–Hadamard
// transform, y = H·D·u, D = random signs") and its fwht(), whose butterfly
// (a + b, a - b) over spans 1, 2, 4, ... and final 1/sqrt(d) this file
// computes; FFHT (Andoni et al., "Practical and optimal LSH for angular
// distance", NIPS 2015) for the in-register layout of a fast transform;
// the numpy reproduction's haar(d, rng) = q * sign(diag r) of a Gaussian matrix's QR, which
// is Mezzadri's ("How to generate random matrices from the classical compact
// groups", Notices AMS 54, 2007) recipe for Haar measure on O(d).
//
// The SIMD forms of the transform and of the Haar product are in
// rotation_avx2.cpp (rotation_simd.h); this file calls the one
// core/kernel_set.h chose, and holds the portable forms they must match.
//
// GCC 12 reports a false -Wmaybe-uninitialized inside its own AVX-512
// intrinsics (the deliberately undefined merge operand of _mm512_extractf64x4_pd)
// when Eigen's products are built with -march=native: GCC bug 105593 (as
// -Wuninitialized in sanitizer builds). It must be silenced before
// <immintrin.h> is first included.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "quant/rotation.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>

// Eigen's packet width (SSE, AVX2, AVX-512) and its explicit FMAs change the
// order and rounding of the QR's reductions, so a vectorized QR gives Haar
// matrices that differ in their last bits between machines. Scalar Eigen,
// built like the rest of the library with -ffp-contract=off, gives the same Q
// everywhere; the QR runs once per (layer, head, block), so speed hardly matters.
#define EIGEN_DONT_VECTORIZE
#include <Eigen/Dense>

#include "core/error.h"
#include "core/kernel_set.h"
#include "core/rng.h"
#include "quant/rotation_simd.h"

namespace tqlab {

// ---------------------------------------------------------------------------
// Fast Walsh–Hadamard transform

namespace {

using rotation_kernels::fwht_scale;
using rotation_kernels::kMaxLogInRegisters;
using rotation_kernels::kMaxLogInRegistersAvx512;
using rotation_kernels::kMinLogInRegisters;
using rotation_kernels::kMinLogInRegistersAvx512;

// One butterfly stage of span `half`: (x[j], x[j + half]) <- (x[j] + x[j + half],
// x[j] - x[j + half]) for every pair. The SIMD forms compute exactly these sums
// and differences, so every form produces the same bits.
void butterfly_stage(float* x, std::size_t n, std::size_t half) {
  for (std::size_t block = 0; block < n; block += 2 * half) {
    float* lo = x + block;
    float* hi = lo + half;
    for (std::size_t j = 0; j < half; ++j) {
      const float a = lo[j];
      const float b = hi[j];
      lo[j] = a + b;
      hi[j] = a - b;
    }
  }
}

void scale_all(float* x, std::size_t n, float scale) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= scale;
}

// The rows of `rows` (rotation_kernels::HadamardRows) by a SIMD form that
// keeps a row in registers (AVX2: 8..128 floats, AVX-512: 16..256), the signs
// and scales fused into its loads and stores. nullopt when no SIMD form takes
// this size (the caller then runs the portable passes); else whether every
// result is finite (always true without post_scales).
std::optional<bool> hadamard_rows_simd(int log_dim, const rotation_kernels::HadamardRows& rows) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512:
      if (log_dim >= kMinLogInRegistersAvx512 && log_dim <= kMaxLogInRegistersAvx512) {
        return simd::hadamard_rows_avx512(log_dim, rows);
      }
      [[fallthrough]];
    case KernelSet::avx2:
      if (log_dim >= kMinLogInRegisters && log_dim <= kMaxLogInRegisters)
        return simd::hadamard_rows_avx2(log_dim, rows);
      return std::nullopt;
#endif
    default: return std::nullopt;
  }
}

// n contiguous rows of 2^log_dim floats with optional signs before and after.
rotation_kernels::HadamardRows plain_rows(std::int64_t n, int log_dim, const float* pre_signs, const float* post_signs,
                                          const float* in, float* out) {
  rotation_kernels::HadamardRows rows;
  rows.n = n;
  rows.in = in;
  rows.in_stride = std::int64_t{1} << log_dim;
  rows.pre_signs = pre_signs;
  rows.post_signs = post_signs;
  rows.out = out;
  rows.out_stride = rows.in_stride;
  return rows;
}

}  // namespace

void fwht_normalized_portable(float* x, int log_n) {
  assert(log_n >= 0 && log_n <= 30);
  const std::size_t n = std::size_t{1} << log_n;
  for (std::size_t half = 1; half < n; half *= 2) butterfly_stage(x, n, half);
  scale_all(x, n, fwht_scale(log_n));
}

void fwht_normalized(float* x, int log_n) {
  if (!hadamard_rows_simd(log_n, plain_rows(1, log_n, nullptr, nullptr, x, x))) {
    switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
      case KernelSet::avx512:
      case KernelSet::avx2:
        if (log_n >= kMinLogInRegisters) return simd::fwht_normalized_avx2(x, log_n);
        break;
#endif
      default: break;
    }
    fwht_normalized_portable(x, log_n);
  }
}

// ---------------------------------------------------------------------------
// Rotations

Rotation::~Rotation() = default;

void Rotation::forward_scaled(std::int64_t n, const float* in, std::int64_t in_stride, const float* scales,
                              float* out) const {
  const auto d = static_cast<std::size_t>(dim());
  for (std::int64_t r = 0; r < n; ++r) {
    const float* x = in + r * in_stride;
    float* y = out + static_cast<std::size_t>(r) * d;
    for (std::size_t i = 0; i < d; ++i) y[i] = x[i] * scales[r];
  }
  forward(n, out, out);
}

bool Rotation::inverse_scaled(std::int64_t n, const float* in, const float* scales, float* out,
                              std::int64_t out_stride) const {
  const auto d = static_cast<std::size_t>(dim());
  std::vector<float> rotated;
  const float* source = out;
  if (out_stride == static_cast<std::int64_t>(d)) {
    inverse(n, in, out);
  } else {
    rotated.resize(static_cast<std::size_t>(n) * d);
    inverse(n, in, rotated.data());
    source = rotated.data();
  }
  bool finite = true;
  for (std::int64_t r = 0; r < n; ++r) {
    const float* x = source + static_cast<std::size_t>(r) * d;
    float* y = out + r * out_stride;
    for (std::size_t i = 0; i < d; ++i) {
      y[i] = x[i] * scales[r];
      finite = finite && std::isfinite(y[i]);
    }
  }
  return finite;
}

namespace {

void copy_unless_same(std::size_t count, const float* in, float* out) {
  if (in != out) std::copy_n(in, count, out);
}

void multiply_by_signs(std::size_t count, const float* signs, float* x) {
  for (std::size_t i = 0; i < count; ++i) x[i] *= signs[i];
}

class IdentityRotation final : public Rotation {
 public:
  explicit IdentityRotation(int dim) : Rotation(dim) {}
  RotationKind kind() const override { return RotationKind::none; }
  void forward(std::int64_t n, const float* in, float* out) const override {
    copy_unless_same(static_cast<std::size_t>(n) * static_cast<std::size_t>(dim()), in, out);
  }
  void inverse(std::int64_t n, const float* in, float* out) const override { forward(n, in, out); }
};

// out_row = Σ_k in_row[k] * rows(k, :) for each of n rows; rows: dim x dim
// row-major. A sum of scaled matrix rows (axpy form, not dot products), so the
// loops vectorize without reassociating any sum: every output element is
// accumulated over k = 0, 1, ..., dim-1 in that order by the same operation
// in every code path, so a vector's result does not depend on n, on its place
// in the batch, or on any thread count. (An sgemm would choose its blocking and
// summation order from the shapes and the thread count.)
// Every step is a fused multiply-add: here std::fma (correctly rounded
// everywhere, by the FMA instruction or in software), in the SIMD forms the FMA
// instruction, so every form rounds identically: rot=haar gives the same bits
// on every CPU.
void multiply_by_rows_portable(std::int64_t n, int dim, const float* rows, const float* in, float* out) {
  const auto d = static_cast<std::size_t>(dim);
  std::vector<float> accumulator(d);  // in may alias out
  for (std::int64_t r = 0; r < n; ++r) {
    const float* x = in + static_cast<std::size_t>(r) * d;
    std::fill(accumulator.begin(), accumulator.end(), 0.0f);
    for (std::size_t k = 0; k < d; ++k) {
      const float weight = x[k];
      const float* row = rows + k * d;
      for (std::size_t i = 0; i < d; ++i) accumulator[i] = std::fma(weight, row[i], accumulator[i]);
    }
    std::copy(accumulator.begin(), accumulator.end(), out + static_cast<std::size_t>(r) * d);
  }
}

void multiply_by_rows(std::int64_t n, int dim, const float* rows, const float* in, float* out) {
  switch (active_kernel_set()) {
#if TQLAB_X86_KERNELS
    case KernelSet::avx512:
    case KernelSet::avx2: return simd::multiply_by_rows_avx2(n, dim, rows, in, out);
#endif
    default: return multiply_by_rows_portable(n, dim, rows, in, out);
  }
}

}  // namespace

HadamardRotation::HadamardRotation(int log_dim, std::uint64_t seed)
    : Rotation(1 << log_dim), log_dim_(log_dim) {
  assert(log_dim >= 0 && (1 << log_dim) <= kMaxHadamardDim);
  Rng rng(seed);
  signs_.resize(static_cast<std::size_t>(dim()));
  for (float& sign : signs_) sign = rng.coin() ? -1.0f : 1.0f;
}

void HadamardRotation::forward(std::int64_t n, const float* in, float* out) const {
  if (hadamard_rows_simd(log_dim_, plain_rows(n, log_dim_, signs_.data(), nullptr, in, out))) return;
  const auto d = static_cast<std::size_t>(dim());
  for (std::int64_t r = 0; r < n; ++r) {
    const float* x = in + static_cast<std::size_t>(r) * d;
    float* y = out + static_cast<std::size_t>(r) * d;
    for (std::size_t i = 0; i < d; ++i) y[i] = x[i] * signs_[i];
    fwht_normalized(y, log_dim_);
  }
}

void HadamardRotation::inverse(std::int64_t n, const float* in, float* out) const {
  if (hadamard_rows_simd(log_dim_, plain_rows(n, log_dim_, nullptr, signs_.data(), in, out))) return;
  const auto d = static_cast<std::size_t>(dim());
  for (std::int64_t r = 0; r < n; ++r) {
    const float* y = in + static_cast<std::size_t>(r) * d;
    float* x = out + static_cast<std::size_t>(r) * d;
    copy_unless_same(d, y, x);
    fwht_normalized(x, log_dim_);
    multiply_by_signs(d, signs_.data(), x);
  }
}

void HadamardRotation::forward_scaled(std::int64_t n, const float* in, std::int64_t in_stride, const float* scales,
                                      float* out) const {
  rotation_kernels::HadamardRows rows = plain_rows(n, log_dim_, signs_.data(), nullptr, in, out);
  rows.in_stride = in_stride;
  rows.pre_scales = scales;
  if (!hadamard_rows_simd(log_dim_, rows)) Rotation::forward_scaled(n, in, in_stride, scales, out);
}

bool HadamardRotation::inverse_scaled(std::int64_t n, const float* in, const float* scales, float* out,
                                      std::int64_t out_stride) const {
  rotation_kernels::HadamardRows rows = plain_rows(n, log_dim_, nullptr, signs_.data(), in, out);
  rows.post_scales = scales;
  rows.out_stride = out_stride;
  const std::optional<bool> finite = hadamard_rows_simd(log_dim_, rows);
  return finite ? *finite : Rotation::inverse_scaled(n, in, scales, out, out_stride);
}

// Seeds of the two rounds: streams 1 and 2 of the rotation's seed.
DoubleHadamardRotation::DoubleHadamardRotation(int log_dim, std::uint64_t seed)
    : Rotation(1 << log_dim), first_(log_dim, derive_seed({seed, 1})), second_(log_dim, derive_seed({seed, 2})) {}

void DoubleHadamardRotation::forward(std::int64_t n, const float* in, float* out) const {
  first_.forward(n, in, out);
  second_.forward(n, out, out);
}

void DoubleHadamardRotation::inverse(std::int64_t n, const float* in, float* out) const {
  second_.inverse(n, in, out);
  first_.inverse(n, out, out);
}

HaarRotation::HaarRotation(int dim, std::uint64_t seed) : Rotation(dim) {
  if (dim < 1 || dim > kMaxHaarDim) {
    fail("rot=haar: dimension must be between 1 and {}, got {}", kMaxHaarDim, dim);
  }
  Rng rng(seed);
  Eigen::MatrixXd gaussian(dim, dim);
  for (int r = 0; r < dim; ++r) {
    for (int c = 0; c < dim; ++c) gaussian(r, c) = rng.gaussian();
  }
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(gaussian);
  Eigen::MatrixXd q = qr.householderQ();
  // G = Q R is unique once diag(R) > 0. Householder QR leaves the signs of
  // diag(R) to the algorithm (it makes Q(0,0) <= 0, for one), so flip each
  // column of Q whose R diagonal entry is negative: Q diag(sign(diag R)) is
  // then Haar-distributed (Mezzadri 2007).
  for (int c = 0; c < dim; ++c) {
    if (qr.matrixQR()(c, c) < 0.0) q.col(c) *= -1.0;
  }
  const auto d = static_cast<std::size_t>(dim);
  matrix_.resize(d * d);
  transposed_.resize(d * d);
  for (std::size_t r = 0; r < d; ++r) {
    for (std::size_t c = 0; c < d; ++c) {
      const auto value = static_cast<float>(q(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)));
      matrix_[r * d + c] = value;
      transposed_[c * d + r] = value;
    }
  }
}

void HaarRotation::forward(std::int64_t n, const float* in, float* out) const {
  // y = Π x = Σ_j x_j Π(:, j): the columns of Π are the rows of Πᵀ.
  multiply_by_rows(n, dim(), transposed_.data(), in, out);
}

void HaarRotation::inverse(std::int64_t n, const float* in, float* out) const {
  // x = Πᵀ y = Σ_i y_i Π(i, :).
  multiply_by_rows(n, dim(), matrix_.data(), in, out);
}

bool hadamard_supports(int dim) {
  return dim >= 1 && dim <= kMaxHadamardDim && std::has_single_bit(static_cast<unsigned>(dim));
}

std::unique_ptr<Rotation> Rotation::make(RotationKind kind, int dim, std::uint64_t seed) {
  if (dim < 1) fail("rot={}: dimension must be at least 1, got {}", rotation_kind_name(kind), dim);
  switch (kind) {
    case RotationKind::hadamard:
      if (!hadamard_supports(dim)) {
        fail("rot=hadamard: dimension must be a power of two (1, 2, 4, ..., {}), got {}; "
             "use rot=haar for other sizes", kMaxHadamardDim, dim);
      }
      return std::make_unique<HadamardRotation>(std::countr_zero(static_cast<unsigned>(dim)), seed);
    case RotationKind::hadamard2:
      if (!hadamard_supports(dim)) {
        fail("rot=hadamard2: dimension must be a power of two (1, 2, 4, ..., {}), got {}; "
             "use rot=haar for other sizes", kMaxHadamardDim, dim);
      }
      return std::make_unique<DoubleHadamardRotation>(std::countr_zero(static_cast<unsigned>(dim)), seed);
    case RotationKind::haar:
      return std::make_unique<HaarRotation>(dim, seed);
    case RotationKind::none:
      return std::make_unique<IdentityRotation>(dim);
  }
  fail("unknown rotation kind {}", static_cast<int>(kind));
}

}  // namespace tqlab
