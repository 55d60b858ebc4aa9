// The `tq` quantizer: TurboQuant / PolarQuant with the layout choices that
// decide whether it works (Zandieh et al., arXiv:2504.19874, Algorithms 1-2;
// the perplexity study and the numpy reproduction: docs/SOURCES.md; docs/REFERENCE.md#tq-options).
//
// Per vector x (head dim D), per block of B channels:
//   1. center (optional), keep ||x_blk|| in the norm type, u = x_blk / ||x_blk||
//      (a zero block stays zero);
//   2. y = Pi u with a seeded rotation (randomized Hadamard or Haar);
//   3. each y_i -> its Lloyd–Max code (b bits, or b-1 with qjl=prod);
//   4. QJL (optional): sign(S r) and ||r|| of the residual r = y - c[codes].
//      The sketch is taken in the rotated frame: S Pi is again an i.i.d.
//      Gaussian matrix, so this is the paper's estimator, one rotation cheaper;
//   5. decode: c[codes] (+ sqrt(pi/2)/m ||r|| S^T signs) -> nc / debias ->
//      Pi^T -> * norm (+ mean).
// outliers=K@B2 quantizes the K channels of largest RMS as a second group
// with its own norm, rotation and B2-bit codebook.
//
// Packed layout, byte by byte, with one worked size (D = 128, b = 3: 3.125
// bits per value): quant/tq_layout.h.
#pragma once

#include <vector>

#include "quant/quantizer.h"
#include "quant/registry.h"
#include "quant/tq_options.h"

namespace tqlab {

class TqQuantizer final : public Quantizer {
 public:
  explicit TqQuantizer(TqOptions options) : options_(options) {}

  std::string spec() const override { return options_.spec(); }
  std::string spec_for_dim(int dim) const override;
  void check_dim(int dim) const override;
  /// True unless center=channel or outliers= (per-head channel statistics).
  bool encodes_tokens_independently() const override;
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

  const TqOptions& options() const { return options_; }

 private:
  TqOptions options_;
};

/// The `tq` entry of the registry.
std::vector<MethodInfo> turbo_methods();

}  // namespace tqlab
