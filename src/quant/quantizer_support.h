// Small helpers the quantizer families share: where a tensor sits, for
// messages, the check that a buffer handed to decode() has the size its
// shape implies, and the errors decoders raise on bytes they cannot trust.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "quant/quantizer.h"

namespace tqlab {

/// "the key tensor of layer 3, kv head 1", for error messages.
std::string tensor_location(const QuantContext& context);

/// Throws InputError naming `spec` and the shape when encoded.bytes.size()
/// differs from `expected_bytes` (a truncated buffer or one written by
/// another spec), so decode() never reads past the end.
void require_encoded_size(const EncodedTensor& encoded, std::size_t expected_bytes, const std::string& spec);

/// Index of the first NaN or Inf in x[0 .. count), or -1 when all are finite.
/// A branch-free scan the compiler vectorizes decides first; only a hit is located.
std::int64_t first_non_finite(std::int64_t count, const float* x);

/// Throws InputError for bytes that no encode() of `spec` writes:
/// "quantizer 'SPEC': encoded bytes of the key tensor of layer L, kv head H: WHAT; the
/// bytes are corrupt or were written by another spec".
[[noreturn]] void fail_corrupt(std::string_view spec, const QuantContext& context, std::string_view what);

/// Throws fail_corrupt naming the token and channel of the first non-finite
/// value of a decoded tensor (tokens x dim floats), if any: decode's last
/// line of defence where the stored values alone do not bound the output.
void require_finite_decoded(std::string_view spec, const QuantContext& context, std::int64_t tokens, int dim,
                            const float* out);

}  // namespace tqlab
