// How far a rotation is from Haar on structured inputs (docs/ROTATIONS.md).
//
// TurboQuant's guarantees (Theorem 1's D_mse, debias's alpha = E<Q(u), u>)
// hold for a Haar-random rotation and any fixed input, because Pi x is then
// uniform on the sphere. A randomized Hadamard rotation is not Haar: for a
// one-hot x (the extreme of an outlier-dominated key) H D e_i has every
// coordinate exactly +-1/sqrt(B), so every coordinate falls in the same cell
// and the error is deterministic, not the codebook's average. This module
// measures, through the real quantizer (encode -> bytes -> decode), on a given
// set of vectors under several rotation seeds:
//   d_mse          mean of ||x - x~||^2 / ||x||^2       (theory: the codebook's D_mse)
//   inner_product  mean of <x~, x> / ||x||^2            (debias: 1 when unbiased; plain: alpha)
// Standard errors treat each seed as one cluster: vectors quantized under one
// rotation are not independent of each other.
#pragma once

#include <cstdint>
#include <vector>

#include "theory/bounds.h"

namespace tqlab {

class Quantizer;

struct StructuredInputStats {
  Estimate d_mse;          ///< over seeds, of the per-seed mean ||x - x~||^2 / ||x||^2
  Estimate inner_product;  ///< over seeds, of the per-seed mean <x~, x> / ||x||^2
};

/// Encodes and decodes the `count` vectors x (count x dim floats, none zero)
/// as one tensor per seed s = 0 .. seeds-1, with QuantContext seed
/// derive_seed({seed, s}) (a fresh rotation per seed). seeds >= 2.
StructuredInputStats measure_structured_input(const Quantizer& quantizer, int dim, std::int64_t count,
                                              const float* x, int seeds, std::uint64_t seed);

/// The dim one-hot vectors e_0, ..., e_{dim-1}: dim x dim floats, row-major.
std::vector<float> one_hot_vectors(int dim);

}  // namespace tqlab
