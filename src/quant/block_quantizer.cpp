// llama.cpp block quantizers q8_0, q4_0, q4_1 (rules and layout in
// block_quantizer.h). Written from ggml's reference routines' definitions;
// the golden-block tests pin rounding and nibble order.
#include "quant/block_quantizer.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/name_table.h"
#include "quant/quantizer_support.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

constexpr int kHalfBlock = kQuantBlockSize / 2;

// ggml multiplies by the reciprocal and takes 0 for a zero scale, so an
// all-zero block gets codes that decode to zero without dividing by zero.
// A subnormal scale (below 2^-128) has no float reciprocal either: it also
// takes 0 (ggml would form Inf and NaN codes, undefined when cast to int);
// its fp16 copy is 0, so the block decodes to zero whatever the codes.
float reciprocal_or_zero(float d) {
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  return std::isfinite(inverse) ? inverse : 0.0f;
}

std::uint8_t pack_nibbles(int low, int high) { return static_cast<std::uint8_t>(low | (high << 4)); }

bool fp16_is_finite(std::uint16_t bits) { return (bits & 0x7C00u) != 0x7C00u; }

// The fp16 side values of a block that must be finite for it to decode.
bool side_values_finite(const BlockQ8_0& block) { return fp16_is_finite(block.scale_fp16); }
bool side_values_finite(const BlockQ4_0& block) { return fp16_is_finite(block.scale_fp16); }
bool side_values_finite(const BlockQ4_1& block) {
  return fp16_is_finite(block.scale_fp16) && fp16_is_finite(block.min_fp16);
}

// The formats' method names (llama.cpp's type names).
constexpr auto kBlockFormatNames = make_name_table<BlockFormat>(
    {{BlockFormat::q8_0, "q8_0"}, {BlockFormat::q4_0, "q4_0"}, {BlockFormat::q4_1, "q4_1"}});

const char* block_format_name(BlockFormat format) { return kBlockFormatNames.name(format).data(); }

// Quantizes tokens*dim values (dim a multiple of 32) block by block into
// `out` (one Block per 32 values, row-major). One loop for every format.
template <typename Block, typename QuantizeBlock>
EncodedTensor encode_blocks(std::int64_t tokens, int dim, const float* x, const QuantContext& context,
                            const std::string& spec, QuantizeBlock quantize_block) {
  const std::int64_t block_count = tokens * dim / kQuantBlockSize;
  EncodedTensor encoded{tokens, dim, std::vector<std::uint8_t>(static_cast<std::size_t>(block_count) * sizeof(Block))};
  for (std::int64_t i = 0; i < block_count; ++i) {
    const Block block = quantize_block(x + i * kQuantBlockSize);
    if (!side_values_finite(block)) {
      const std::int64_t first = i * kQuantBlockSize;
      fail("quantizer '{}': in {}, the block at token {}, channels {}..{} needs an fp16 scale or minimum beyond "
           "fp16's largest finite value 65504 (values too large for this format)",
           spec, tensor_location(context), first / dim, first % dim, first % dim + kQuantBlockSize - 1);
    }
    std::memcpy(encoded.bytes.data() + i * sizeof(Block), &block, sizeof(Block));
  }
  return encoded;
}

template <typename Block>
void decode_blocks(const EncodedTensor& encoded, const QuantContext& context, const std::string& spec, float* out) {
  const std::int64_t block_count = encoded.tokens * encoded.dim / kQuantBlockSize;
  require_encoded_size(encoded, static_cast<std::size_t>(block_count) * sizeof(Block), spec);
  for (std::int64_t i = 0; i < block_count; ++i) {
    Block block;
    std::memcpy(&block, encoded.bytes.data() + i * sizeof(Block), sizeof(Block));
    // encode() refuses blocks whose side values overflow fp16; finite ones
    // bound every decoded value (|q| * 65504 + 65504).
    if (!side_values_finite(block)) {
      const std::int64_t first = i * kQuantBlockSize;
      fail_corrupt(spec, context,
                   fmt::format("the block at token {}, channels {}..{} stores a non-finite fp16 scale or minimum",
                               first / encoded.dim, first % encoded.dim, first % encoded.dim + kQuantBlockSize - 1));
    }
    dequantize_block(block, out + i * kQuantBlockSize);
  }
}

}  // namespace

BlockQ8_0 quantize_block_q8_0(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQuantBlockSize; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float inverse_d = reciprocal_or_zero(d);
  BlockQ8_0 block;
  block.scale_fp16 = float_to_half(d);
  // std::round: halves away from zero, as ggml's roundf.
  for (int j = 0; j < kQuantBlockSize; ++j) block.codes[j] = static_cast<std::int8_t>(std::round(x[j] * inverse_d));
  return block;
}

BlockQ4_0 quantize_block_q4_0(const float* x) {
  // The signed value of largest magnitude (the first on ties) maps to code 0,
  // i.e. -8 * d, exactly; the opposite end gets the 15 remaining steps, and
  // values beyond 7.5 steps there are clamped to 15.
  float amax = 0.0f;
  float extreme = 0.0f;
  for (int j = 0; j < kQuantBlockSize; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      extreme = x[j];
    }
  }
  const float d = extreme / -8.0f;
  const float inverse_d = reciprocal_or_zero(d);
  BlockQ4_0 block;
  block.scale_fp16 = float_to_half(d);
  // x * inverse_d + 8.5 lies in [0.5, 16.5], so truncation is floor and
  // rounds x / d to nearest with halves up.
  const auto code = [&](float value) { return std::min(15, static_cast<int>(value * inverse_d + 8.5f)); };
  for (int j = 0; j < kHalfBlock; ++j) block.nibbles[j] = pack_nibbles(code(x[j]), code(x[j + kHalfBlock]));
  return block;
}

BlockQ4_1 quantize_block_q4_1(const float* x) {
  float min = FLT_MAX;
  float max = -FLT_MAX;
  for (int j = 0; j < kQuantBlockSize; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / 15.0f;
  const float inverse_d = reciprocal_or_zero(d);
  BlockQ4_1 block;
  block.scale_fp16 = float_to_half(d);
  block.min_fp16 = float_to_half(min);
  const auto code = [&](float value) { return std::min(15, static_cast<int>((value - min) * inverse_d + 0.5f)); };
  for (int j = 0; j < kHalfBlock; ++j) block.nibbles[j] = pack_nibbles(code(x[j]), code(x[j + kHalfBlock]));
  return block;
}

void dequantize_block(const BlockQ8_0& block, float* out) {
  const float d = half_to_float(block.scale_fp16);
  for (int j = 0; j < kQuantBlockSize; ++j) out[j] = static_cast<float>(block.codes[j]) * d;
}

void dequantize_block(const BlockQ4_0& block, float* out) {
  const float d = half_to_float(block.scale_fp16);
  for (int j = 0; j < kHalfBlock; ++j) {
    out[j] = static_cast<float>((block.nibbles[j] & 0x0F) - 8) * d;
    out[j + kHalfBlock] = static_cast<float>((block.nibbles[j] >> 4) - 8) * d;
  }
}

void dequantize_block(const BlockQ4_1& block, float* out) {
  const float d = half_to_float(block.scale_fp16);
  const float min = half_to_float(block.min_fp16);
  for (int j = 0; j < kHalfBlock; ++j) {
    out[j] = static_cast<float>(block.nibbles[j] & 0x0F) * d + min;
    out[j + kHalfBlock] = static_cast<float>(block.nibbles[j] >> 4) * d + min;
  }
}

std::string BlockQuantizer::spec() const { return block_format_name(format_); }

void BlockQuantizer::check_dim(int dim) const {
  if (dim % kQuantBlockSize == 0) return;
  fail("quantizer spec '{}': head dim {} is not a multiple of {} ({} packs blocks of {} values along each vector)",
       spec(), dim, kQuantBlockSize, spec(), kQuantBlockSize);
}

EncodedTensor BlockQuantizer::encode(std::int64_t tokens, int dim, const float* x,
                                     const QuantContext& context) const {
  check_dim(dim);
  require_finite(tokens, dim, x, context);
  switch (format_) {
    case BlockFormat::q8_0: return encode_blocks<BlockQ8_0>(tokens, dim, x, context, spec(), quantize_block_q8_0);
    case BlockFormat::q4_0: return encode_blocks<BlockQ4_0>(tokens, dim, x, context, spec(), quantize_block_q4_0);
    case BlockFormat::q4_1: return encode_blocks<BlockQ4_1>(tokens, dim, x, context, spec(), quantize_block_q4_1);
  }
  return {};
}

void BlockQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  check_dim(encoded.dim);
  switch (format_) {
    case BlockFormat::q8_0: return decode_blocks<BlockQ8_0>(encoded, context, spec(), out);
    case BlockFormat::q4_0: return decode_blocks<BlockQ4_0>(encoded, context, spec(), out);
    case BlockFormat::q4_1: return decode_blocks<BlockQ4_1>(encoded, context, spec(), out);
  }
}

std::vector<MethodInfo> block_methods() {
  std::vector<MethodInfo> methods;
  const auto add = [&](BlockFormat format, std::string summary, std::string bits) {
    const std::string name = block_format_name(format);
    methods.push_back({name, std::move(summary), {}, std::move(bits), {name},
                       [format](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
                         reader.finish({});
                         return std::make_unique<BlockQuantizer>(format);
                       }});
  };
  add(BlockFormat::q8_0, "llama.cpp q8_0: blocks of 32, fp16 scale amax/127, int8 codes", "8.5 (34 bytes per 32)");
  add(BlockFormat::q4_0, "llama.cpp q4_0: blocks of 32, fp16 scale (signed max)/-8, 4-bit codes",
      "4.5 (18 bytes per 32)");
  add(BlockFormat::q4_1, "llama.cpp q4_1: blocks of 32, fp16 scale (max-min)/15 and fp16 min, 4-bit codes",
      "5.0 (20 bytes per 32)");
  return methods;
}

}  // namespace tqlab
