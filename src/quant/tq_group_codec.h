// Encoding and decoding one group of a `tq` tensor (quant/tq_layout.h): per
// block of channels, norms, the seeded rotation, Lloyd-Max codes and the
// optional QJL sketch of the residual, chunk by chunk of tokens so that the
// rows being worked on stay in L1. Every step works row by row: no row's
// bytes depend on the chunk size.
#pragma once

#include <cstdint>

#include "quant/quantizer.h"
#include "quant/tq_layout.h"
#include "quant/tq_options.h"

namespace tqlab::tq {

/// The tensor being encoded: x as given, and the values quantized (x, or a
/// centered copy for center=channel). Both tokens x dim floats.
struct EncodeInput {
  std::int64_t tokens = 0;
  int dim = 0;
  const float* x = nullptr;
  const float* source = nullptr;
};

/// Encodes group `group` of every token of `input` into its sections of
/// `bytes` (the tensor's packed bytes, TensorPlan::total_bytes long).
void encode_group(const TqOptions& options, const GroupPlan& group, const GroupSections& sections,
                  const EncodeInput& input, const QuantContext& context, std::uint8_t* bytes);

/// Decodes group `group` of `tokens` tokens from `bytes` into its channels of
/// `out` (tokens x dim floats). InputError on bytes no encoder writes.
void decode_group(const TqOptions& options, const GroupPlan& group, const GroupSections& sections,
                  const std::uint8_t* bytes, std::int64_t tokens, int dim, const QuantContext& context, float* out);

}  // namespace tqlab::tq
