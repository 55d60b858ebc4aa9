// The one fake-quantization step (quantize -> pack -> unpack -> dequantize)
// for vectors that come from anywhere: a dump's slab (kv/kv_slab.h names
// the file, tensor, sequence and head) or a model's KV cache during a forward
// pass (model/kv_hook.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "quant/quantizer.h"

namespace tqlab {

/// Encodes `rows` vectors x (rows x dim floats) as one tensor in `context`
/// ({seed, role, layer number, kv head}), decodes the bytes into `decoded`
/// (same shape; may not alias x) and returns the packed size in bytes. An
/// InputError from the quantizer (NaN/Inf in x, a value its format cannot
/// hold) is rethrown as "WHERE: message".
std::size_t fake_quantize_rows(const Quantizer& quantizer, const QuantContext& context, std::int64_t rows, int dim,
                               const float* x, float* decoded, std::string_view where);

}  // namespace tqlab
