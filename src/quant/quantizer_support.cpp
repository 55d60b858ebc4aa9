#include "quant/quantizer_support.h"

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

}  // namespace tqlab
