#include "quant/quantizer_support.h"

#include <bit>

#include "core/error.h"

namespace tqlab {

std::string tensor_location(const QuantContext& context) {
  return fmt::format("the {} tensor of layer {}, kv head {}", role_name(context.role), context.layer,
                     context.kv_head);
}

void require_encoded_size(const EncodedTensor& encoded, std::size_t expected_bytes, const std::string& spec) {
  if (encoded.bytes.size() == expected_bytes) return;
  fail("quantizer '{}': encoded tensor of {} tokens x {} values holds {} bytes, expected {}", spec,
       encoded.tokens, encoded.dim, encoded.bytes.size(), expected_bytes);
}

std::int64_t first_non_finite(std::int64_t count, const float* x) {
  // NaN and Inf have every exponent bit set. A scan that stops at the first
  // hit cannot be vectorized, and cost as much as quantizing.
  constexpr std::uint32_t kExponent = 0x7F800000u;
  std::uint32_t found = 0;
  for (std::int64_t i = 0; i < count; ++i) found |= (std::bit_cast<std::uint32_t>(x[i]) & kExponent) == kExponent;
  if (found == 0) return -1;
  for (std::int64_t i = 0; i < count; ++i) {
    if ((std::bit_cast<std::uint32_t>(x[i]) & kExponent) == kExponent) return i;
  }
  return -1;
}

void fail_corrupt(std::string_view spec, const QuantContext& context, std::string_view what) {
  fail("quantizer '{}': encoded bytes of {}: {}; the bytes are corrupt or were written by another spec", spec,
       tensor_location(context), what);
}

void require_finite_decoded(std::string_view spec, const QuantContext& context, std::int64_t tokens, int dim,
                            const float* out) {
  const std::int64_t at = first_non_finite(tokens * dim, out);
  if (at < 0) return;
  fail_corrupt(spec, context,
               fmt::format("token {}, channel {} decodes to {}, beyond float range", at / dim, at % dim, out[at]));
}

}  // namespace tqlab
