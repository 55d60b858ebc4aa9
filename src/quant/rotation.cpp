// Random rotations: Walsh–Hadamard with random signs, Haar-random dense, identity.
//
// Sources: seed 000, step 2 ("rotate with a randomized Walsh–Hadamard
// transform, y = H·D·u, D = random signs") and its fwht(), whose butterfly
// (a + b, a - b) over spans 1, 2, 4, ... and final 1/sqrt(d) this file
// computes; FFHT (Andoni et al., "Practical and optimal LSH for angular
// distance", NIPS 2015) for the in-register layout of a fast transform;
// seed 001's haar(d, rng) = q * sign(diag r) of a Gaussian matrix's QR, which
// is Mezzadri's ("How to generate random matrices from the classical compact
// groups", Notices AMS 54, 2007) recipe for Haar measure on O(d).
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
#include <string>

// Eigen's packet width (SSE, AVX2, AVX-512) and its explicit FMAs change the
// order and rounding of the QR's reductions, so a vectorized QR gives Haar
// matrices that differ in their last bits between machines. Scalar Eigen,
// built like the rest of the library with -ffp-contract=off, gives the same Q
// everywhere; the QR runs once per (layer, head, block), so speed hardly matters.
#define EIGEN_DONT_VECTORIZE
#include <Eigen/Dense>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "core/error.h"
#include "core/rng.h"

namespace tqlab {

std::string_view rotation_kind_name(RotationKind kind) {
  switch (kind) {
    case RotationKind::hadamard: return "hadamard";
    case RotationKind::haar: return "haar";
    case RotationKind::none: return "none";
    case RotationKind::hadamard2: return "hadamard2";
  }
  return "?";
}

std::optional<RotationKind> parse_rotation_kind(std::string_view name) {
  for (const RotationKind kind : kRotationKinds) {
    if (name == rotation_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Fast Walsh–Hadamard transform

namespace {

// 1 / sqrt(2^log_n) as a float, without a sqrt and divide on every call:
// 2^-(log_n/2) is built from its exponent bits, and for odd log_n it is scaled
// by sqrt(1/2) rounded to float; multiplying by a power of two is exact, so the
// result equals float(1 / sqrt(2^log_n)) correctly rounded.
float fwht_scale(int log_n) {
  const auto exponent_bits = static_cast<std::uint32_t>(127 - log_n / 2) << 23;
  const float power_of_two = std::bit_cast<float>(exponent_bits);
  constexpr float kSqrtHalf = 0x1.6a09e6p-1f;  // sqrt(0.5) rounded to nearest float
  return (log_n % 2 != 0) ? power_of_two * kSqrtHalf : power_of_two;
}

// One butterfly stage of span `half`: (x[j], x[j + half]) <- (x[j] + x[j + half],
// x[j] - x[j + half]) for every pair. The AVX2 path computes exactly these sums
// and differences, so both paths produce the same bits.
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

#ifdef __AVX2__
// The same network for n >= 8, eight floats per register. a + (-b) is bitwise
// a - b and b + a is a + b, so every path below matches butterfly_stage and
// scale_all bit for bit; the scale is applied to each finished sum, which
// rounds exactly as a separate final pass would.

// Spans 1, 2 and 4 stay inside one register: permute the partner into place,
// negate the lanes that take a difference, add.
inline __m256 butterflies_within_register(__m256 v) {
  const __m256 negate_odd =
      _mm256_castsi256_ps(_mm256_setr_epi32(0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN));
  const __m256 negate_upper_pairs =
      _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, INT32_MIN, INT32_MIN, 0, 0, INT32_MIN, INT32_MIN));
  const __m256 negate_upper_half =
      _mm256_castsi256_ps(_mm256_setr_epi32(0, 0, 0, 0, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN));
  v = _mm256_add_ps(_mm256_permute_ps(v, 0b10'11'00'01), _mm256_xor_ps(v, negate_odd));
  v = _mm256_add_ps(_mm256_permute_ps(v, 0b01'00'11'10), _mm256_xor_ps(v, negate_upper_pairs));
  return _mm256_add_ps(_mm256_permute2f128_ps(v, v, 0x01), _mm256_xor_ps(v, negate_upper_half));
}

// n <= 128: all n/8 registers stay live, so the whole transform is one load
// and one store per register (the loops have constant bounds and unroll).
// Optional ±1 signs are applied as the input is loaded (pre_signs: x ∘ s
// first) or as the result is stored (post_signs: s ∘ y last); a product with
// ±1 is exact, so this matches separate passes bit for bit. All loads come
// before any store, so in == out is fine.
template <int LogN>
void fwht_normalized_in_registers(const float* in, float* out, float scale, const float* pre_signs,
                                  const float* post_signs) {
  constexpr int kRegisters = (1 << LogN) / 8;
  __m256 v[kRegisters];
#pragma GCC unroll 16
  for (int i = 0; i < kRegisters; ++i) {
    __m256 loaded = _mm256_loadu_ps(in + 8 * i);
    if (pre_signs != nullptr) loaded = _mm256_mul_ps(loaded, _mm256_loadu_ps(pre_signs + 8 * i));
    v[i] = butterflies_within_register(loaded);
  }
#pragma GCC unroll 4
  for (int half = 1; half < kRegisters; half *= 2) {
#pragma GCC unroll 16
    for (int i = 0; i < kRegisters; ++i) {
      if ((i & half) != 0) continue;
      const __m256 a = v[i];
      const __m256 b = v[i + half];
      v[i] = _mm256_add_ps(a, b);
      v[i + half] = _mm256_sub_ps(a, b);
    }
  }
  const __m256 scale_vector = _mm256_set1_ps(scale);
#pragma GCC unroll 16
  for (int i = 0; i < kRegisters; ++i) {
    __m256 result = _mm256_mul_ps(v[i], scale_vector);
    if (post_signs != nullptr) result = _mm256_mul_ps(result, _mm256_loadu_ps(post_signs + 8 * i));
    _mm256_storeu_ps(out + 8 * i, result);
  }
}

// Sizes the register kernel handles: 8 ... 128 floats.
constexpr int kMinLogInRegisters = 3;
constexpr int kMaxLogInRegisters = 7;

void fwht_normalized_in_registers(const float* in, float* out, int log_n, const float* pre_signs,
                                  const float* post_signs) {
  const float scale = fwht_scale(log_n);
  switch (log_n) {
    case 3: return fwht_normalized_in_registers<3>(in, out, scale, pre_signs, post_signs);
    case 4: return fwht_normalized_in_registers<4>(in, out, scale, pre_signs, post_signs);
    case 5: return fwht_normalized_in_registers<5>(in, out, scale, pre_signs, post_signs);
    case 6: return fwht_normalized_in_registers<6>(in, out, scale, pre_signs, post_signs);
    case 7: return fwht_normalized_in_registers<7>(in, out, scale, pre_signs, post_signs);
  }
  assert(false && "log_n outside the register kernel's range");
}

// n > 128: the first seven stages (spans 1 ... 64) act on each 128-float
// chunk separately, so they run in registers chunk by chunk (scale 1 is
// exact); the remaining stages are passes over memory, two stages (spans half
// and 2 half) per pass, then a lone final stage when their count is odd. The
// final stage multiplies by the scale.
void fwht_normalized_in_memory(float* x, int log_n) {
  const std::size_t n = std::size_t{1} << log_n;
  constexpr std::size_t kChunk = std::size_t{1} << kMaxLogInRegisters;
  for (std::size_t chunk = 0; chunk < n; chunk += kChunk) {
    fwht_normalized_in_registers<kMaxLogInRegisters>(x + chunk, x + chunk, 1.0f, nullptr, nullptr);
  }
  const __m256 scale_vector = _mm256_set1_ps(fwht_scale(log_n));
  std::size_t half = kChunk;
  for (; 4 * half <= n; half *= 4) {
    const bool last = 4 * half == n;
    for (std::size_t block = 0; block < n; block += 4 * half) {
      float* p0 = x + block;
      float* p1 = p0 + half;
      float* p2 = p1 + half;
      float* p3 = p2 + half;
      for (std::size_t j = 0; j < half; j += 8) {
        const __m256 a0 = _mm256_loadu_ps(p0 + j);
        const __m256 a1 = _mm256_loadu_ps(p1 + j);
        const __m256 a2 = _mm256_loadu_ps(p2 + j);
        const __m256 a3 = _mm256_loadu_ps(p3 + j);
        const __m256 b0 = _mm256_add_ps(a0, a1);
        const __m256 b1 = _mm256_sub_ps(a0, a1);
        const __m256 b2 = _mm256_add_ps(a2, a3);
        const __m256 b3 = _mm256_sub_ps(a2, a3);
        __m256 c0 = _mm256_add_ps(b0, b2);
        __m256 c1 = _mm256_add_ps(b1, b3);
        __m256 c2 = _mm256_sub_ps(b0, b2);
        __m256 c3 = _mm256_sub_ps(b1, b3);
        if (last) {
          c0 = _mm256_mul_ps(c0, scale_vector);
          c1 = _mm256_mul_ps(c1, scale_vector);
          c2 = _mm256_mul_ps(c2, scale_vector);
          c3 = _mm256_mul_ps(c3, scale_vector);
        }
        _mm256_storeu_ps(p0 + j, c0);
        _mm256_storeu_ps(p1 + j, c1);
        _mm256_storeu_ps(p2 + j, c2);
        _mm256_storeu_ps(p3 + j, c3);
      }
    }
  }
  if (2 * half == n) {
    float* lo = x;
    float* hi = x + half;
    for (std::size_t j = 0; j < half; j += 8) {
      const __m256 a = _mm256_loadu_ps(lo + j);
      const __m256 b = _mm256_loadu_ps(hi + j);
      _mm256_storeu_ps(lo + j, _mm256_mul_ps(_mm256_add_ps(a, b), scale_vector));
      _mm256_storeu_ps(hi + j, _mm256_mul_ps(_mm256_sub_ps(a, b), scale_vector));
    }
  }
}

void fwht_normalized_avx2(float* x, int log_n) {
  if (log_n <= kMaxLogInRegisters) {
    fwht_normalized_in_registers(x, x, log_n, nullptr, nullptr);
  } else {
    fwht_normalized_in_memory(x, log_n);
  }
}
#endif

}  // namespace

void fwht_normalized_portable(float* x, int log_n) {
  assert(log_n >= 0 && log_n <= 30);
  const std::size_t n = std::size_t{1} << log_n;
  for (std::size_t half = 1; half < n; half *= 2) butterfly_stage(x, n, half);
  scale_all(x, n, fwht_scale(log_n));
}

void fwht_normalized(float* x, int log_n) {
#ifdef __AVX2__
  if (log_n >= 3) {
    assert(log_n <= 30);
    fwht_normalized_avx2(x, log_n);
    return;
  }
#endif
  fwht_normalized_portable(x, log_n);
}

// ---------------------------------------------------------------------------
// Rotations

Rotation::~Rotation() = default;

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
#if defined(__AVX2__) && defined(__FMA__)
// With FMA every step is an explicit fused multiply-add (intrinsic in the
// tiles, std::fma at the edges), so tiles and edges round identically.
// A tile of 4 vectors x 16 outputs keeps its 8 accumulators in registers while
// k runs, so each matrix row segment loaded serves four vectors.
constexpr std::size_t kTileVectors = 4;
constexpr std::size_t kTileWidth = 16;

void multiply_tile(std::size_t d, const float* rows, const float* x, std::size_t column, float* y) {
  __m256 low[kTileVectors];
  __m256 high[kTileVectors];
  for (std::size_t v = 0; v < kTileVectors; ++v) low[v] = high[v] = _mm256_setzero_ps();
  for (std::size_t k = 0; k < d; ++k) {
    const __m256 row_low = _mm256_loadu_ps(rows + k * d + column);
    const __m256 row_high = _mm256_loadu_ps(rows + k * d + column + 8);
    for (std::size_t v = 0; v < kTileVectors; ++v) {
      const __m256 weight = _mm256_broadcast_ss(x + v * d + k);
      low[v] = _mm256_fmadd_ps(weight, row_low, low[v]);
      high[v] = _mm256_fmadd_ps(weight, row_high, high[v]);
    }
  }
  for (std::size_t v = 0; v < kTileVectors; ++v) {
    _mm256_storeu_ps(y + v * d + column, low[v]);
    _mm256_storeu_ps(y + v * d + column + 8, high[v]);
  }
}

void multiply_edge(std::size_t d, const float* rows, const float* x, std::size_t vectors, std::size_t column,
                   float* y) {
  for (std::size_t v = 0; v < vectors; ++v) {
    for (std::size_t c = column; c < d; ++c) {
      float accumulator = 0.0f;
      for (std::size_t k = 0; k < d; ++k) accumulator = std::fma(x[v * d + k], rows[k * d + c], accumulator);
      y[v * d + c] = accumulator;
    }
  }
}

void multiply_by_rows(std::int64_t n, int dim, const float* rows, const float* in, float* out) {
  const auto d = static_cast<std::size_t>(dim);
  const auto count = static_cast<std::size_t>(n);
  const std::size_t tiled_width = d - d % kTileWidth;
  std::vector<float> batch(kTileVectors * d);  // a copy of the inputs: in may alias out
  for (std::size_t first = 0; first < count; first += kTileVectors) {
    const std::size_t vectors = std::min(kTileVectors, count - first);
    std::copy_n(in + first * d, vectors * d, batch.data());
    float* y = out + first * d;
    std::size_t column = 0;
    if (vectors == kTileVectors) {
      for (; column < tiled_width; column += kTileWidth) multiply_tile(d, rows, batch.data(), column, y);
    }
    multiply_edge(d, rows, batch.data(), vectors, column, y);
  }
}
#else
// Without FMA hardware: one plain loop serves every vector, with std::fma (correctly
// rounded everywhere, in software if need be) so that it rounds exactly as the
// FMA tiles above: rot=haar gives the same bits in every build.
void multiply_by_rows(std::int64_t n, int dim, const float* rows, const float* in, float* out) {
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
#endif

}  // namespace

HadamardRotation::HadamardRotation(int log_dim, std::uint64_t seed)
    : Rotation(1 << log_dim), log_dim_(log_dim) {
  assert(log_dim >= 0 && (1 << log_dim) <= kMaxHadamardDim);
  Rng rng(seed);
  signs_.resize(static_cast<std::size_t>(dim()));
  for (float& sign : signs_) sign = rng.coin() ? -1.0f : 1.0f;
}

void HadamardRotation::forward(std::int64_t n, const float* in, float* out) const {
  const auto d = static_cast<std::size_t>(dim());
  for (std::int64_t r = 0; r < n; ++r) {
    const float* x = in + static_cast<std::size_t>(r) * d;
    float* y = out + static_cast<std::size_t>(r) * d;
#ifdef __AVX2__
    // Head dims 8..128: signs fused into the transform's loads, one pass.
    if (log_dim_ >= kMinLogInRegisters && log_dim_ <= kMaxLogInRegisters) {
      fwht_normalized_in_registers(x, y, log_dim_, signs_.data(), nullptr);
      continue;
    }
#endif
    for (std::size_t i = 0; i < d; ++i) y[i] = x[i] * signs_[i];
    fwht_normalized(y, log_dim_);
  }
}

void HadamardRotation::inverse(std::int64_t n, const float* in, float* out) const {
  const auto d = static_cast<std::size_t>(dim());
  for (std::int64_t r = 0; r < n; ++r) {
    const float* y = in + static_cast<std::size_t>(r) * d;
    float* x = out + static_cast<std::size_t>(r) * d;
#ifdef __AVX2__
    if (log_dim_ >= kMinLogInRegisters && log_dim_ <= kMaxLogInRegisters) {
      fwht_normalized_in_registers(y, x, log_dim_, nullptr, signs_.data());
      continue;
    }
#endif
    copy_unless_same(d, y, x);
    fwht_normalized(x, log_dim_);
    multiply_by_signs(d, signs_.data(), x);
  }
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
