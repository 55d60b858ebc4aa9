// Random rotations applied before scalar quantization (step 2 of quant/tq_quantizer.h),
// kept outside the quantizer as faiss keeps its RandomRotationMatrix.
//
// A rotation Π is a seeded orthogonal B x B matrix. Rotating a unit vector
// spreads its energy over all coordinates, so each rotated coordinate follows
// (nearly) the same known marginal and one scalar codebook fits them all
// (TurboQuant, the perplexity study and the numpy reproduction: docs/SOURCES.md).
//   hadamard: Π = H diag(s) / sqrt(B), s in {+1,-1}^B random, H the Sylvester
//             Hadamard matrix (H_ij = (-1)^popcount(i & j)); O(B log B);
//             B must be a power of two.
//   hadamard2: two such rounds with independent signs,
//             Π = H diag(s2) H diag(s1) / B; O(B log B), twice hadamard's work.
//             One round maps a one-hot vector to ±1/sqrt(B) in every
//             coordinate, far from the Haar marginal the codebooks assume;
//             the second round makes it a sum of B random signs per
//             coordinate, close to Gaussian (docs/ROTATIONS.md measures it).
//   haar:     a dense Haar-random orthogonal matrix; any B; O(B^2) per vector.
//   none:     the identity (a baseline).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/name_table.h"

namespace tqlab {

enum class RotationKind { hadamard, haar, none, hadamard2 };

/// Every kind and its name (the spelling of the spec option rot=...), in the order `tqlab list` and the
/// rot= choices name them.
inline constexpr auto kRotationKindNames = make_name_table<RotationKind>({{RotationKind::hadamard, "hadamard"},
                                                                         {RotationKind::hadamard2, "hadamard2"},
                                                                         {RotationKind::haar, "haar"},
                                                                         {RotationKind::none, "none"}});

/// "hadamard", "hadamard2", "haar", "none".
inline std::string_view rotation_kind_name(RotationKind kind) { return kRotationKindNames.name(kind); }

/// Inverse of rotation_kind_name; nullopt for any other string.
inline std::optional<RotationKind> parse_rotation_kind(std::string_view name) {
  return kRotationKindNames.parse(name);
}

/// Largest dimension each kind accepts: a Haar matrix is B^2 floats (twice,
/// see HaarRotation) and costs O(B^3) to build.
inline constexpr int kMaxHadamardDim = 1 << 16;
inline constexpr int kMaxHaarDim = 4096;

/// True when a Hadamard rotation exists for `dim` coordinates: a power of two
/// up to kMaxHadamardDim (what rot=hadamard and the default rotation need).
bool hadamard_supports(int dim);

/// True for the kinds built from Walsh–Hadamard transforms, which need
/// hadamard_supports(dim).
constexpr bool is_hadamard_kind(RotationKind kind) {
  return kind == RotationKind::hadamard || kind == RotationKind::hadamard2;
}

class Rotation {
 public:
  /// Builds the rotation of `dim` coordinates whose random parts come from
  /// Rng(seed) (pass a seed from derive_seed). Throws InputError when dim < 1,
  /// when dim exceeds the kind's limit, or when a Hadamard kind gets a dim
  /// that is not a power of two (the message lists the allowed sizes).
  static std::unique_ptr<Rotation> make(RotationKind kind, int dim, std::uint64_t seed);

  virtual ~Rotation();

  /// B, the number of coordinates it rotates.
  int dim() const { return dim_; }

  virtual RotationKind kind() const = 0;

  /// y = Π x for n vectors. in, out: n * dim floats, row-major (one vector per
  /// row); in == out is allowed, other overlaps are not.
  virtual void forward(std::int64_t n, const float* in, float* out) const = 0;

  /// x = Πᵀ y, the inverse of forward. Same shapes and aliasing rule.
  virtual void inverse(std::int64_t n, const float* in, float* out) const = 0;

  /// out_r = Π (scales[r] * in_r) for n rows: bit for bit, each value times its
  /// row's scale (one rounded float product), then forward(). in_r starts at
  /// in + r * in_stride (dim() floats, in_stride >= dim()); scales: n floats;
  /// out: n * dim floats. in == out with in_stride == dim() is allowed, other
  /// overlaps are not. The Hadamard rotation fuses the steps in its SIMD forms.
  virtual void forward_scaled(std::int64_t n, const float* in, std::int64_t in_stride, const float* scales,
                              float* out) const;

  /// out_r = scales[r] * Πᵀ in_r for n rows: bit for bit, inverse() and then one
  /// rounded float product per value. in: n * dim floats; out_r starts at out +
  /// r * out_stride (out_stride >= dim()). in == out with out_stride == dim() is
  /// allowed, other overlaps are not. Returns false when some value written is
  /// not finite (a product overflowed or the input held one), else true.
  virtual bool inverse_scaled(std::int64_t n, const float* in, const float* scales, float* out,
                              std::int64_t out_stride) const;

 protected:
  explicit Rotation(int dim) : dim_(dim) {}

 private:
  int dim_;
};

/// Π = H diag(signs) / sqrt(B). forward = multiply by signs, then
/// fwht_normalized; inverse = fwht_normalized, then multiply by signs
/// (H / sqrt(B) is symmetric and its own inverse).
class HadamardRotation final : public Rotation {
 public:
  /// B = 2^log_dim, 0 <= log_dim <= 16. signs[i] = Rng(seed).coin() ? -1 : +1
  /// for i = 0, 1, ..., B-1 in that order.
  HadamardRotation(int log_dim, std::uint64_t seed);

  RotationKind kind() const override { return RotationKind::hadamard; }
  void forward(std::int64_t n, const float* in, float* out) const override;
  void inverse(std::int64_t n, const float* in, float* out) const override;
  void forward_scaled(std::int64_t n, const float* in, std::int64_t in_stride, const float* scales,
                      float* out) const override;
  bool inverse_scaled(std::int64_t n, const float* in, const float* scales, float* out,
                      std::int64_t out_stride) const override;

  int log_dim() const { return log_dim_; }

  /// The random signs s: dim() values, each exactly +1.0f or -1.0f. Exposed so
  /// that a kernel can fuse signs + FWHT + quantization.
  const std::vector<float>& signs() const { return signs_; }

 private:
  int log_dim_;
  std::vector<float> signs_;
};

/// Π = H diag(s2) H diag(s1) / B: two HadamardRotation rounds with
/// independent signs. forward = round 1 then round 2; inverse = the inverse
/// of round 2, then of round 1.
class DoubleHadamardRotation final : public Rotation {
 public:
  /// B = 2^log_dim, 0 <= log_dim <= 16. Round r (1, 2) takes its signs as
  /// HadamardRotation(log_dim, derive_seed({seed, r})) does: each round from
  /// its own stream of the seed.
  DoubleHadamardRotation(int log_dim, std::uint64_t seed);

  RotationKind kind() const override { return RotationKind::hadamard2; }
  void forward(std::int64_t n, const float* in, float* out) const override;
  void inverse(std::int64_t n, const float* in, float* out) const override;

  const HadamardRotation& first() const { return first_; }
  const HadamardRotation& second() const { return second_; }

 private:
  HadamardRotation first_, second_;
};

/// A Haar-random orthogonal matrix (Mezzadri, "How to generate random matrices
/// from the classical compact groups", Notices AMS 54, 2007): fill a B x B
/// matrix G with Rng(seed).gaussian() row by row (G(0,0), G(0,1), ...,
/// G(0,B-1), G(1,0), ...), take its Householder QR in double, and return
/// Q diag(sign(diag R)); without that sign fix Q is not Haar-distributed.
class HaarRotation final : public Rotation {
 public:
  /// 1 <= dim <= kMaxHaarDim (InputError otherwise).
  HaarRotation(int dim, std::uint64_t seed);

  RotationKind kind() const override { return RotationKind::haar; }
  void forward(std::int64_t n, const float* in, float* out) const override;
  void inverse(std::int64_t n, const float* in, float* out) const override;

  /// Π as float, row-major: dim() * dim() values, Π(i, j) = matrix()[i * dim() + j].
  const std::vector<float>& matrix() const { return matrix_; }

 private:
  std::vector<float> matrix_;      ///< Π, row-major
  std::vector<float> transposed_;  ///< Πᵀ, row-major (the columns of Π, contiguous)
};

/// In-place normalized Walsh–Hadamard transform of n = 2^log_n floats:
/// x <- H x / sqrt(n), with H_ij = (-1)^popcount(i & j) (Sylvester order, no
/// bit reversal). 0 <= log_n <= 30; x: n floats. O(n log n). Runs the SIMD
/// form core/kernel_set.h chose; the result is bit-identical to
/// fwht_normalized_portable.
void fwht_normalized(float* x, int log_n);

/// The same transform with plain loops (the portable form). The same
/// butterflies in the same order, so the same bits.
void fwht_normalized_portable(float* x, int log_n);

}  // namespace tqlab
