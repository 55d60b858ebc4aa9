// Scalar codebooks for one coordinate of a randomly rotated unit vector
// (docs/REFERENCE.md#tq-options, steps 3 and 5; the numpy reproduction; TurboQuant,
// arXiv:2504.19874, Theorem 1).
//
// After a Haar-random rotation, each coordinate t of a unit vector in R^d has
// the exact marginal
//     f_d(t) = Γ(d/2) / (√π Γ((d−1)/2)) · (1 − t²)^((d−3)/2),   t ∈ [−1, 1]
// (d = 2: the arcsine density; d = 3: uniform; d → ∞: N(0, 1/d)).
// A codebook is the 2^b reconstruction levels (centroids) of that coordinate
// and the 2^b − 1 decision thresholds between them. Three designs:
//   beta    Lloyd–Max quantizer of f_d (the paper's codebook);
//   gauss   Lloyd–Max quantizer of N(0, 1/d) (the large-d approximation);
//   uniform 2^b equally spaced levels whose step minimizes the MSE under f_d.
// All numbers are computed from exact moments (incomplete beta functions,
// erf), never by sampling. A codebook depends only on (d, b, distribution).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/name_table.h"

namespace tqlab {

enum class CodebookDistribution { beta, gauss, uniform };

/// Every distribution and its name (the words of the `cb=` spec option and `--dist`), in the order the
/// cb= choices list them.
inline constexpr auto kCodebookDistributionNames = make_name_table<CodebookDistribution>(
    {{CodebookDistribution::beta, "beta"}, {CodebookDistribution::gauss, "gauss"},
     {CodebookDistribution::uniform, "uniform"}});

/// "beta", "gauss", "uniform".
inline std::string_view codebook_distribution_name(CodebookDistribution distribution) {
  return kCodebookDistributionNames.name(distribution);
}

/// Inverse of codebook_distribution_name; nullopt for any other word.
inline std::optional<CodebookDistribution> parse_codebook_distribution(std::string_view name) {
  return kCodebookDistributionNames.parse(name);
}

/// Smallest and largest dimension / bit width a codebook can be built for.
inline constexpr int kCodebookMinDim = 2;
inline constexpr int kCodebookMaxDim = 4096;
inline constexpr int kCodebookMinBits = 1;
inline constexpr int kCodebookMaxBits = 8;

struct Codebook {
  int dim = 0;   ///< d: the codebook quantizes one coordinate of a unit vector in R^d
  int bits = 0;  ///< b: 2^b levels
  CodebookDistribution distribution = CodebookDistribution::beta;
  /// 2^b reconstruction levels, strictly ascending, symmetric about 0, in the
  /// coordinate's own units (a coordinate of a unit vector, so |t| <= 1).
  std::vector<double> centroids;
  /// 2^b − 1 interior decision thresholds, ascending; boundaries[i] is the
  /// midpoint of centroids[i] and centroids[i + 1]; the middle one is 0.
  std::vector<double> boundaries;
  /// E[(t − Q(t))²] under the distribution the codebook was designed for
  /// (beta and uniform: the exact marginal f_d; gauss: N(0, 1/d)).
  double mse_per_coord = 0;
  /// E[(t − Q(t))²] under the exact marginal f_d (what a rotated unit vector sees).
  double marginal_mse_per_coord = 0;
  /// d · E[t · Q(t)] under f_d, so that E⟨Q(u), u⟩ = alpha for a rotated unit
  /// vector u; the debias divisor (decode step 5 of quant/tq_quantizer.h). For a Lloyd–Max beta
  /// codebook alpha = 1 − d · marginal_mse_per_coord (the numpy reproduction, docs/SOURCES.md).
  double alpha = 0;
  /// float copies of centroids (2^b) and boundaries (2^b − 1) for kernels.
  std::vector<float> centroids_f, boundaries_f;

  /// Distortion of a whole unit vector: d · mse_per_coord (the paper's D_mse).
  double d_mse() const { return dim * mse_per_coord; }

  /// Index (0 .. 2^b − 1) of the level nearest to t: the number of boundaries
  /// strictly below t (a t exactly on a boundary takes the lower level, as the
  /// quantizer kernels do).
  /// Reference routine: a plain binary search; t must not be NaN.
  int code_of(double t) const;
};

/// Limits of the Lloyd–Max solver (beta and gauss codebooks). The default
/// budget is ten times what any (d, b) needs; tests shrink it to see a solve
/// that did not converge refused.
struct LloydMaxSolverLimits {
  int max_iterations = 100;
};

/// The codebook for (dim, bits, distribution), computed on first use and cached
/// for the life of the process (thread-safe; the reference stays valid).
/// dim 2..4096, bits 1..8; throws InputError naming the allowed range otherwise.
/// Computing one codebook costs <= 2 ms of CPU (b = 8, any d; bench/codebook_bench.cpp).
const Codebook& lloyd_max_codebook(int dim, int bits, CodebookDistribution distribution);

/// The same codebook computed afresh, bypassing the cache (for benchmarks and tests).
/// Throws InternalError (naming d, b, the distribution and the iterations
/// spent) when the Lloyd–Max iteration has not converged within
/// limits.max_iterations: a codebook off its fixed point would silently
/// break every D_mse and alpha derived from it.
Codebook compute_codebook(int dim, int bits, CodebookDistribution distribution,
                          const LloydMaxSolverLimits& limits = {});

}  // namespace tqlab
