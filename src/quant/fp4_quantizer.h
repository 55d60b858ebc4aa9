// The 4-bit float block formats of the newest GPUs: mxfp4 and nvfp4. Elements are FP4 E2M1
// (blocks/e2m1.h), rounded to nearest with ties to even and saturated at +-6 times the scale.
//
//   mxfp4 (OCP Microscaling Formats (MX) Specification v1.0, sections 5 and 6.3): blocks of 32
//     values along the head dim, one E8M0 scale per block (a power of two, 2^(e - 127), e = 0..254):
//     X = 2^(floor(log2(max|x|)) - 2) (2 = the largest E2M1 exponent), clamped to 2^-127..2^127;
//     an all-zero block takes e = 0. code = E2M1(x / X); x~ = value(code) * X.
//     Layout per block: the E8M0 byte, then 16 bytes of codes (byte j: value j low nibble, value
//     j + 16 high nibble), ggml's block_mxfp4 -> 17 bytes per 32 values = 4.25 bits/value.
//   nvfp4 (NVIDIA's NVFP4: blocks of 16, an FP8 E4M3 scale per block and an fp32 scale per tensor;
//     NVIDIA TensorRT Model Optimizer's NVFP4 recipe): the "tensor" of the per-tensor scale is what
//     tqlab quantizes as one tensor, the (role, layer, kv head) slab of every token encoded
//     together, so the scale is that slab's amax, known only once the slab is complete (an engine
//     calibrates it per layer ahead of time):
//       S = max|x over the tensor| / (6 * 448) (1 for an all-zero tensor), stored as fp32;
//       per block of 16: s = E4M3(max|x over the block| / (6 * S)) (nearest even, saturating);
//       code = E2M1(x / (value(s) * S)) (all codes 0 when value(s) is 0); x~ = (value(code) * value(s)) * S.
//     Layout: 4 bytes S, then per block the E4M3 byte and 8 bytes of codes (byte j: value j low
//     nibble, value j + 8 high) -> 4.5 + 32/(tokens*dim) bits/value.
//
// ggml's own mxfp4 and nvfp4 (ggml-quants.c, quantize_row_mxfp4_ref / quantize_row_nvfp4_ref)
// differ in their rounding; docs/REFERENCE.md lists where.
#pragma once

#include <cstdint>
#include <string>

#include "quant/quantizer.h"

namespace tqlab {

enum class Fp4Format : std::uint8_t { mxfp4, nvfp4 };

class Fp4Quantizer final : public Quantizer {
 public:
  explicit Fp4Quantizer(Fp4Format format) : format_(format) {}

  /// mxfp4's scale is per block; nvfp4 shares a per-tensor scale.
  bool encodes_tokens_independently() const override { return format_ == Fp4Format::mxfp4; }
  std::string spec() const override;
  void check_dim(int dim) const override;
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  Fp4Format format_;
};

/// Encodes one MXFP4 block: x holds 32 finite floats, out receives 17 bytes (layout above).
void encode_mxfp4_block(const float* x, std::uint8_t* out);

/// Decodes one MXFP4 block of 17 bytes into 32 floats.
void decode_mxfp4_block(const std::uint8_t* in, float* out);

}  // namespace tqlab
