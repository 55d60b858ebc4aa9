// Float-storage baselines: every value kept in a narrower float type.
//
//   fp32, fp16, bf16: each value rounded to nearest (ties to even) in that
//     type (core/dtype.h); fp16 is the 16-bit reference for compression.
//   fp8_e4m3, fp8_e5m2: OCP FP8 (core/fp8.h) with one fp32 scale per
//     (layer, head) tensor, in the manner of serving engines' scaled fp8 KV
//     caches: scale = amax / fp8_max (1 for an
//     all-zero tensor), code = fp8(x / scale) rounded to nearest even and
//     saturated to +-max, x~ = value(code) * scale.
//
// Packed layout of one tensor (little-endian, row-major, tokens * dim values):
//   fp32:        tokens*dim * 4 bytes (binary32)                 -> 32 bits/value
//   fp16, bf16:  tokens*dim * 2 bytes                            -> 16 bits/value
//   fp8_*:       4 bytes fp32 scale, then tokens*dim code bytes  -> 8 + 32/(tokens*dim)
#pragma once

#include <cstdint>
#include <string>

#include "core/fp8.h"
#include "quant/quantizer.h"

namespace tqlab {

/// The element type of a FloatQuantizer.
enum class StoredFloat : std::uint8_t { fp32, fp16, bf16 };

/// Stores every value as fp32, fp16 or bf16. A finite input that overflows
/// the type (|x| > 65504 for fp16) is an InputError naming token and channel,
/// not a silent Inf.
class FloatQuantizer final : public Quantizer {
 public:
  /// fp16/bf16/fp32 store each value on its own.
  bool encodes_tokens_independently() const override { return true; }
  explicit FloatQuantizer(StoredFloat type) : type_(type) {}

  std::string spec() const override;
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  StoredFloat type_;
};

/// FP8 with one fp32 scale per tensor (see the file comment).
class Fp8Quantizer final : public Quantizer {
 public:
  explicit Fp8Quantizer(Fp8Format format) : format_(format) {}

  std::string spec() const override;
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  Fp8Format format_;
};

}  // namespace tqlab
