// llama.cpp's block formats as quantizers (block_quantizer.h): the bytes are ggml's, made by the
// codecs of src/blocks; this file adds what a quantizer needs around them (whole tensors, the
// fp16 overflow check, corrupt-byte checks, the registry entries).
#include "quant/block_quantizer.h"

#include <cstring>
#include <vector>

#include "blocks/iq4_blocks.h"
#include "core/error.h"
#include "quant/quantizer_support.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

bool fp16_is_finite(std::uint16_t bits) { return (bits & 0x7C00u) != 0x7C00u; }

// The fp16 side values of a block that must be finite for it to decode.
template <typename Block>
bool side_values_finite(const Block& block) {
  if constexpr (requires { block.min_fp16; }) {
    if (!fp16_is_finite(block.min_fp16)) return false;
  }
  return fp16_is_finite(block.scale_fp16);
}

// The per-format facts: block type, name and ggml's two row routines.
template <typename Block>
struct Codec {
  const char* name;
  void (*quantize_row)(const float*, Block*, std::int64_t);
  void (*dequantize_row)(const Block*, float*, std::int64_t);
};

constexpr Codec<BlockQ8_0> kQ8_0{"q8_0", quantize_row_q8_0, dequantize_row_q8_0};
constexpr Codec<BlockQ4_0> kQ4_0{"q4_0", quantize_row_q4_0, dequantize_row_q4_0};
constexpr Codec<BlockQ4_1> kQ4_1{"q4_1", quantize_row_q4_1, dequantize_row_q4_1};
constexpr Codec<BlockQ5_0> kQ5_0{"q5_0", quantize_row_q5_0, dequantize_row_q5_0};
constexpr Codec<BlockQ5_1> kQ5_1{"q5_1", quantize_row_q5_1, dequantize_row_q5_1};
constexpr Codec<BlockIq4Nl> kIq4Nl{"iq4_nl", quantize_row_iq4_nl, dequantize_row_iq4_nl};

// Calls `action(codec)` with the codec of `format`: the one switch over formats.
template <typename Action>
decltype(auto) with_codec(BlockFormat format, Action&& action) {
  switch (format) {
    case BlockFormat::q8_0: return action(kQ8_0);
    case BlockFormat::q4_0: return action(kQ4_0);
    case BlockFormat::q4_1: return action(kQ4_1);
    case BlockFormat::q5_0: return action(kQ5_0);
    case BlockFormat::q5_1: return action(kQ5_1);
    case BlockFormat::iq4_nl: return action(kIq4Nl);
  }
  throw InternalError("BlockQuantizer: unknown block format");
}

std::string block_location(std::int64_t block, int dim) {
  const std::int64_t first = block * kQuantBlockSize;
  return fmt::format("the block at token {}, channels {}..{}", first / dim, first % dim,
                     first % dim + kQuantBlockSize - 1);
}

// Quantizes tokens*dim values (dim a multiple of 32) into one Block per 32 values, row-major.
template <typename Block>
EncodedTensor encode_blocks(std::int64_t tokens, int dim, const float* x, const QuantContext& context,
                            const Codec<Block>& codec) {
  const std::int64_t block_count = tokens * dim / kQuantBlockSize;
  std::vector<Block> blocks(static_cast<std::size_t>(block_count));
  codec.quantize_row(x, blocks.data(), tokens * dim);
  for (std::int64_t i = 0; i < block_count; ++i) {
    if (side_values_finite(blocks[i])) continue;
    fail("quantizer '{}': in {}, {} needs an fp16 scale or minimum beyond fp16's largest finite value 65504 "
         "(values too large for this format)", codec.name, tensor_location(context), block_location(i, dim));
  }
  EncodedTensor encoded{tokens, dim, std::vector<std::uint8_t>(blocks.size() * sizeof(Block))};
  std::memcpy(encoded.bytes.data(), blocks.data(), encoded.bytes.size());
  return encoded;
}

template <typename Block>
void decode_blocks(const EncodedTensor& encoded, const QuantContext& context, const Codec<Block>& codec,
                   float* out) {
  const std::int64_t block_count = encoded.tokens * encoded.dim / kQuantBlockSize;
  require_encoded_size(encoded, static_cast<std::size_t>(block_count) * sizeof(Block), codec.name);
  std::vector<Block> blocks(static_cast<std::size_t>(block_count));
  std::memcpy(blocks.data(), encoded.bytes.data(), encoded.bytes.size());
  // encode() refuses blocks whose side values overflow fp16; finite ones
  // bound every decoded value (|q| * 65504 + 65504).
  for (std::int64_t i = 0; i < block_count; ++i) {
    if (side_values_finite(blocks[i])) continue;
    fail_corrupt(codec.name, context,
                 block_location(i, encoded.dim) + " stores a non-finite fp16 scale or minimum");
  }
  codec.dequantize_row(blocks.data(), out, encoded.tokens * encoded.dim);
}

}  // namespace

std::string BlockQuantizer::spec() const {
  return with_codec(format_, [](const auto& codec) { return std::string(codec.name); });
}

void BlockQuantizer::check_dim(int dim) const {
  if (dim % kQuantBlockSize == 0) return;
  fail("quantizer spec '{}': head dim {} is not a multiple of {} ({} packs blocks of {} values along each vector)",
       spec(), dim, kQuantBlockSize, spec(), kQuantBlockSize);
}

EncodedTensor BlockQuantizer::encode(std::int64_t tokens, int dim, const float* x,
                                     const QuantContext& context) const {
  check_dim(dim);
  require_finite(tokens, dim, x, context);
  return with_codec(format_, [&](const auto& codec) { return encode_blocks(tokens, dim, x, context, codec); });
}

void BlockQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  check_dim(encoded.dim);
  with_codec(format_, [&](const auto& codec) { decode_blocks(encoded, context, codec, out); });
}

std::vector<MethodInfo> block_methods() {
  std::vector<MethodInfo> methods;
  const auto add = [&](BlockFormat format, std::string summary, std::string bits) {
    const std::string name = BlockQuantizer(format).spec();
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
  add(BlockFormat::q5_0, "llama.cpp q5_0: blocks of 32, fp16 scale (signed max)/-16, 5-bit codes",
      "5.5 (22 bytes per 32)");
  add(BlockFormat::q5_1, "llama.cpp q5_1: blocks of 32, fp16 scale (max-min)/31 and fp16 min, 5-bit codes",
      "6.0 (24 bytes per 32)");
  add(BlockFormat::iq4_nl, "llama.cpp iq4_nl: blocks of 32, fp16 least-squares scale, 4-bit codes on a "
      "non-uniform grid", "4.5 (18 bytes per 32)");
  return methods;
}

}  // namespace tqlab
