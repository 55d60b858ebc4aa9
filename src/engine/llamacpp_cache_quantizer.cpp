#include "engine/llamacpp_cache_quantizer.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "blocks/legacy_blocks.h"
#include "core/error.h"
#include "engine/llamacpp_engine.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

// Row by row: Hugging Face's rotate-half order to GGML's adjacent pairs (stored channel 2i is
// channel i, 2i + 1 is i + dim/2), or back with `to_ggml` false.
void move_channels(std::int64_t rows, int dim, const float* in, float* out, bool to_ggml) {
  const int half = dim / 2;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* x = in + r * dim;
    float* y = out + r * dim;
    for (int i = 0; i < half; ++i) {
      if (to_ggml) {
        y[2 * i] = x[i];
        y[2 * i + 1] = x[i + half];
      } else {
        y[i] = x[2 * i];
        y[i + half] = x[2 * i + 1];
      }
    }
  }
}

class LlamaCppCacheQuantizer final : public Quantizer {
 public:
  LlamaCppCacheQuantizer(const LlamaCppCacheType& type, bool rotation, std::unique_ptr<Quantizer> writer)
      : type_(type), rotation_(rotation), writer_(std::move(writer)) {}

  std::string spec() const override { return writer_->spec(); }
  std::string spec_for_dim(int dim) const override { return writer_->spec_for_dim(dim); }
  void check_dim(int dim) const override {
    writer_->check_dim(dim);
    if (dim % 2 != 0) fail("llama.cpp cache '{}': head dim {} is odd (RoPE pairs channels)", type_.name, dim);
  }
  bool encodes_tokens_independently() const override { return true; }

  EncodedTensor encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const override {
    require_finite(tokens, dim, x, context);
    std::vector<float> rows(static_cast<std::size_t>(tokens) * static_cast<std::size_t>(dim));
    if (context.role == Role::key) {
      move_channels(tokens, dim, x, rows.data(), true);
    } else {
      std::memcpy(rows.data(), x, rows.size() * sizeof(float));
    }
    if (const int width = rotation_width(dim, context.role); width > 0) {
      llamacpp_hadamard_blocks(width, rows.size(), rows.data());
    }
    if (type_.type != LlamaCppType::q8_0) return writer_->encode(tokens, dim, rows.data(), context);
    EncodedTensor out;  // the x86 writer, in q8_0's block layout (which the plain q8_0 decodes)
    out.tokens = tokens;
    out.dim = dim;
    out.bytes.resize(rows.size() / kQuantBlockSize * sizeof(BlockQ8_0));
    for (std::size_t b = 0; b * kQuantBlockSize < rows.size(); ++b) {
      BlockQ8_0 block{};
      block.scale_fp16 = quantize_block_q8_0_x86(rows.data() + b * kQuantBlockSize, block.codes);
      std::memcpy(out.bytes.data() + b * sizeof(BlockQ8_0), &block, sizeof(BlockQ8_0));
    }
    return out;
  }

  void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const override {
    const std::size_t size = static_cast<std::size_t>(encoded.tokens) * static_cast<std::size_t>(encoded.dim);
    std::vector<float> rows(size);
    writer_->decode(encoded, context, rows.data());
    if (const int width = rotation_width(encoded.dim, context.role); width > 0) {
      llamacpp_hadamard_blocks(width, size, rows.data());
    }
    if (context.role == Role::key) {
      move_channels(encoded.tokens, encoded.dim, rows.data(), out, false);
    } else {
      std::memcpy(out, rows.data(), size * sizeof(float));
    }
  }

 private:
  int rotation_width(int dim, Role role) const {
    if (!rotation_ || !type_.quantized || dim % 64 != 0) return 0;
    return role == Role::key ? llamacpp_key_rotation_width(dim) : 64;
  }

  const LlamaCppCacheType& type_;
  bool rotation_;
  std::unique_ptr<Quantizer> writer_;  ///< tqlab's quantizer of the type: ggml's reference bytes
};

}  // namespace

std::unique_ptr<Quantizer> make_llamacpp_cache_quantizer(const LlamaCppCacheType& type, bool rotation) {
  const std::string spec = std::string(type.name) == "f16"   ? "fp16"
                           : std::string(type.name) == "f32" ? "fp32"
                                                             : type.name;
  return std::make_unique<LlamaCppCacheQuantizer>(type, rotation, make_quantizer(spec));
}

}  // namespace tqlab
