// Small helpers the quantizer families share: where a tensor sits, for
// messages, and the check that a buffer handed to decode() has the size its
// shape implies.
#pragma once

#include <cstddef>
#include <string>

#include "quant/quantizer.h"

namespace tqlab {

/// "the key tensor of layer 3, kv head 1", for error messages.
std::string tensor_location(const QuantContext& context);

/// Throws InputError naming `spec` and the shape when encoded.bytes.size()
/// differs from `expected_bytes` (a truncated buffer or one written by
/// another spec), so decode() never reads past the end.
void require_encoded_size(const EncodedTensor& encoded, std::size_t expected_bytes, const std::string& spec);

}  // namespace tqlab
