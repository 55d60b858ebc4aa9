// vLLM's TurboQuant values (rules and layout in vllm_value_quantizer.h).
#include "quant/vllm_value_quantizer.h"

#include <algorithm>
#include <vector>

#include "core/bit_pack.h"
#include "core/dtype.h"
#include "core/error.h"
#include "quant/quantizer_support.h"
#include "quant/vllm_slot.h"

namespace tqlab {
namespace {

constexpr int kDimMultiple = 8;
constexpr float kSmallestScale = 1e-8f;
constexpr std::size_t kSideBytes = 2 * sizeof(std::uint16_t);  // fp16 scale, fp16 zero

std::size_t record_bytes(int dim, int bits) { return vllm_code_bytes(dim, bits) + kSideBytes; }

}  // namespace

std::string VllmValueQuantizer::spec() const { return fmt::format("vllm_uniform:b={}", bits_); }

void VllmValueQuantizer::check_dim(int dim) const {
  if (dim > 0 && dim % kDimMultiple == 0) return;
  fail("quantizer spec '{}': head dim {} is not a positive multiple of {} (vLLM packs 3-bit codes eight at a time)",
       spec(), dim, kDimMultiple);
}

EncodedTensor VllmValueQuantizer::encode(std::int64_t tokens, int dim, const float* x,
                                         const QuantContext& context) const {
  check_dim(dim);
  require_finite(tokens, dim, x, context);
  const int levels = (1 << bits_) - 1;
  const std::size_t code_bytes = vllm_code_bytes(dim, bits_);
  const std::size_t record = record_bytes(dim, bits_);
  EncodedTensor encoded{tokens, dim, std::vector<std::uint8_t>(static_cast<std::size_t>(tokens) * record, 0)};
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* value = x + t * dim;
    const auto [lowest, highest] = std::minmax_element(value, value + dim);
    const float lo = *lowest;
    float scale = (*highest - lo) / static_cast<float>(levels);
    // vLLM keeps s only when s > 1e-8: a constant vector (s = 0) gets 1e-8. (hi - lo of finite
    // floats may overflow to Inf; the fp16 check below refuses it.)
    if (!(scale > kSmallestScale)) scale = kSmallestScale;
    const std::uint16_t scale_bits = float_to_half(scale);
    const std::uint16_t zero_bits = float_to_half(lo);
    if (!half_is_finite(scale_bits) || !half_is_finite(zero_bits)) {
      fail("quantizer '{}': in {}, the value vector at token {} needs an fp16 scale {} or zero {} beyond fp16's "
           "largest finite value 65504 (values too large for vLLM's value format)",
           spec(), tensor_location(context), t, scale, lo);
    }
    for (int j = 0; j < dim; ++j) {
      // (v - lo) / s + 0.5 >= 0.5, so truncation is vLLM's int cast; capping the float first keeps
      // the conversion defined whatever the ratio.
      const float position = (value[j] - lo) / scale + 0.5f;
      codes[static_cast<std::size_t>(j)] =
          static_cast<std::uint8_t>(position >= static_cast<float>(levels) ? levels : static_cast<int>(position));
    }
    std::uint8_t* out = encoded.bytes.data() + static_cast<std::size_t>(t) * record;
    pack_codes(codes.size(), codes.data(), bits_, out, 0);
    put_half_le(scale_bits, out + code_bytes);
    put_half_le(zero_bits, out + code_bytes + sizeof(std::uint16_t));
  }
  return encoded;
}

void VllmValueQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  check_dim(encoded.dim);
  const int dim = encoded.dim;
  const std::size_t code_bytes = vllm_code_bytes(dim, bits_);
  const std::size_t record = record_bytes(dim, bits_);
  require_encoded_size(encoded, static_cast<std::size_t>(encoded.tokens) * record, spec());
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(dim));
  for (std::int64_t t = 0; t < encoded.tokens; ++t) {
    const std::uint8_t* in = encoded.bytes.data() + static_cast<std::size_t>(t) * record;
    const std::uint16_t scale_bits = get_half_le(in + code_bytes);
    const std::uint16_t zero_bits = get_half_le(in + code_bytes + sizeof(std::uint16_t));
    if (!half_is_finite(scale_bits) || !half_is_finite(zero_bits)) {
      fail_corrupt(spec(), context, fmt::format("the value vector at token {} stores a non-finite fp16 scale or zero",
                                                t));
    }
    const float scale = half_to_float(scale_bits);
    const float zero = half_to_float(zero_bits);
    unpack_codes(codes.size(), in, 0, bits_, codes.data());
    // Finite fp16 scale and zero bound every value: |code · s + lo| <= 15 · 65504 + 65504.
    float* value = out + t * dim;
    for (int j = 0; j < dim; ++j) value[j] = static_cast<float>(codes[static_cast<std::size_t>(j)]) * scale + zero;
  }
}

}  // namespace tqlab
