// KIVI: asymmetric min/max quantization with keys per channel and values per
// token. Source: Z. Liu et al., "KIVI: A Tuning-Free Asymmetric 2bit
// Quantization for KV Cache", ICML 2024 (arXiv:2402.02750), Sec. 3.
// (KIVI's full-precision residual of recent tokens is the sweep's `window`,
// not part of the quantizer.)
//
// Groups: keys (Role::key) are grouped per channel, each group being one
// channel over `group` consecutive tokens (outlier channels get their own
// range); values and queries per token, each group `group` consecutive
// channels of one token. A last partial group (tokens, resp. channels, not a
// multiple of `group`) is a smaller group.
//
// Per group with minimum lo and maximum hi, L = 2^b - 1 levels above zero:
//   zero  = lo rounded down to fp16, scale = (hi - zero)/L rounded up to fp16
//   q     = round((x - zero) / scale) clamped to 0..L  (q = 0 when scale = 0)
//   x~    = zero + q * scale
// Codes are computed with the stored fp16 scale and zero, so encoder and
// decoder agree. Rounding zero down and scale up (rather than to nearest)
// keeps [lo, hi] inside the grid, so |x - x~| <= scale/2 for every value,
// including the group's extremes; a constant group of fp16 values decodes
// exactly (scale 0).
//
// Packed layout of one tensor (little-endian):
//   for each group g, in order: fp16 scale, fp16 zero          (4 bytes each)
//     keys:    group (token_block, channel) at index token_block*dim + channel
//     values:  group (token, channel_block) at index token*ceil(dim/group) + channel_block
//   then tokens*dim codes of b bits, row-major, packed LSB-first across byte
//   boundaries (core/bit_pack.h), zero-padded to a whole byte.
// Bits per value: b + 32/group when tokens (keys) or dim (values) is a
// multiple of group, more with a partial group; counted from the bytes.
#pragma once

#include <cstdint>
#include <string>

#include "quant/quantizer.h"

namespace tqlab {

class KiviQuantizer final : public Quantizer {
 public:
  static constexpr int kDefaultGroup = 32;
  static constexpr int kMaxGroup = 1 << 16;

  /// bits: 1..8; group: values per group, 1..kMaxGroup (asserted; the spec parser checks).
  KiviQuantizer(int bits, int group);

  /// "kivi:b=B" or "kivi:b=B,group=G" (group omitted at its default 32).
  std::string spec() const override;
  /// Groups by channel over tokens when context.role is key, else by token over channels.
  /// A group whose fp16 scale or zero would overflow is an InputError naming where it starts.
  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override;
  /// context.role must be the one used to encode (it fixes the grouping).
  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override;

 private:
  std::uint64_t code_bit(std::int64_t token, int dim) const;

  int bits_;
  int group_;
};

}  // namespace tqlab
