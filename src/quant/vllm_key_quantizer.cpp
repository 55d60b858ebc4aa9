// vLLM's TurboQuant keys (algorithm and layout in vllm_key_quantizer.h).
#include "quant/vllm_key_quantizer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "core/bit_pack.h"
#include "core/dtype.h"
#include "core/error.h"
#include "quant/quantizer_support.h"
#include "quant/rotation.h"
#include "quant/vllm_codebook.h"
#include "quant/vllm_slot.h"

namespace tqlab {
namespace {

constexpr int kMinDim = 8;
constexpr float kNormGuard = 1e-8f;         // vLLM divides by ‖k‖ + 1e-8
constexpr float kCorrectionGuard = 1e-16f;  // and by sqrt(Σc² + 1e-16) under norm correction

std::size_t record_bytes(int dim, int bits) { return vllm_code_bytes(dim, bits) + sizeof(std::uint16_t); }

int log2_of(int dim) { return std::countr_zero(static_cast<unsigned>(dim)); }

}  // namespace

std::string VllmKeyQuantizer::spec() const {
  return fmt::format("vllm_tq_key:b={}{}", bits_, norm_correction_ ? ",nc" : "");
}

void VllmKeyQuantizer::check_dim(int dim) const {
  if (dim >= kMinDim && hadamard_supports(dim)) return;
  fail("quantizer spec '{}': head dim {} is not a power of two from {} to {} (vLLM rotates keys with a {}x{} "
       "Hadamard matrix and packs 3-bit codes eight at a time)",
       spec(), dim, kMinDim, kMaxHadamardDim, dim, dim);
}

EncodedTensor VllmKeyQuantizer::encode(std::int64_t tokens, int dim, const float* x,
                                       const QuantContext& context) const {
  check_dim(dim);
  require_finite(tokens, dim, x, context);
  const VllmCodebook& codebook = vllm_codebook(dim, bits_);
  const std::size_t code_bytes = vllm_code_bytes(dim, bits_);
  const std::size_t record = record_bytes(dim, bits_);
  EncodedTensor encoded{tokens, dim, std::vector<std::uint8_t>(static_cast<std::size_t>(tokens) * record, 0)};
  std::vector<float> rotated(static_cast<std::size_t>(dim));
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* key = x + t * dim;
    // The sum of squares in double: the norm is then the correctly rounded
    // float, whatever D (vLLM's float reduction agrees to an ulp, and fp16 storage absorbs that).
    double squares = 0.0;
    for (int j = 0; j < dim; ++j) squares += static_cast<double>(key[j]) * key[j];
    const float norm = static_cast<float>(std::sqrt(squares));
    const std::uint16_t norm_bits = float_to_half(norm);
    if (!half_is_finite(norm_bits)) {
      fail("quantizer '{}': in {}, the key at token {} has norm {} beyond fp16's largest finite value 65504 "
           "(vLLM stores key norms in fp16)",
           spec(), tensor_location(context), t, norm);
    }
    const float divisor = norm + kNormGuard;
    for (int j = 0; j < dim; ++j) rotated[static_cast<std::size_t>(j)] = key[j] / divisor;
    fwht_normalized(rotated.data(), log2_of(dim));
    for (int j = 0; j < dim; ++j) {
      const auto above = std::upper_bound(codebook.midpoints.begin(), codebook.midpoints.end(),
                                          rotated[static_cast<std::size_t>(j)]);
      codes[static_cast<std::size_t>(j)] = static_cast<std::uint8_t>(above - codebook.midpoints.begin());
    }
    std::uint8_t* out = encoded.bytes.data() + static_cast<std::size_t>(t) * record;
    pack_codes(codes.size(), codes.data(), bits_, out, 0);
    put_half_le(norm_bits, out + code_bytes);
  }
  return encoded;
}

void VllmKeyQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  check_dim(encoded.dim);
  const int dim = encoded.dim;
  const std::size_t code_bytes = vllm_code_bytes(dim, bits_);
  const std::size_t record = record_bytes(dim, bits_);
  require_encoded_size(encoded, static_cast<std::size_t>(encoded.tokens) * record, spec());
  const VllmCodebook& codebook = vllm_codebook(dim, bits_);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(dim));
  for (std::int64_t t = 0; t < encoded.tokens; ++t) {
    const std::uint8_t* in = encoded.bytes.data() + static_cast<std::size_t>(t) * record;
    const std::uint16_t norm_bits = get_half_le(in + code_bytes);
    if (!half_is_finite(norm_bits)) {
      fail_corrupt(spec(), context, fmt::format("the key at token {} stores a non-finite fp16 norm", t));
    }
    unpack_codes(codes.size(), in, 0, bits_, codes.data());
    float* key = out + t * dim;
    float squares = 0.0f;
    for (int j = 0; j < dim; ++j) {
      key[j] = codebook.levels[codes[static_cast<std::size_t>(j)]];
      squares += key[j] * key[j];
    }
    // Norm correction puts the decoded direction back on the unit sphere
    // before the norm scales it (the levels alone make it about 1 - D_mse long).
    const float scale = half_to_float(norm_bits) / (norm_correction_ ? std::sqrt(squares + kCorrectionGuard) : 1.0f);
    fwht_normalized(key, log2_of(dim));
    for (int j = 0; j < dim; ++j) key[j] *= scale;
  }
}

}  // namespace tqlab
