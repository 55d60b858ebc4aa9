// mxfp4 and nvfp4 (definitions, sources and layouts in fp4_quantizer.h).
#include "quant/fp4_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "blocks/e2m1.h"
#include "core/error.h"
#include "core/fp8.h"
#include "quant/quantizer_support.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

constexpr int kMxBlock = 32;
constexpr int kMxBlockBytes = 1 + kMxBlock / 2;
constexpr int kNvBlock = 16;
constexpr int kNvBlockBytes = 1 + kNvBlock / 2;
constexpr float kE2m1Max = 6.0f;
constexpr float kE4m3Max = 448.0f;

int block_values(Fp4Format format) { return format == Fp4Format::mxfp4 ? kMxBlock : kNvBlock; }
int block_bytes(Fp4Format format) { return format == Fp4Format::mxfp4 ? kMxBlockBytes : kNvBlockBytes; }

float block_amax(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

// n codes of x / scale (n even), two per byte: value j low nibble, value j + n/2 high nibble.
void pack_e2m1(const float* x, int n, float scale, std::uint8_t* out) {
  for (int j = 0; j < n / 2; ++j) {
    const std::uint8_t low = scale != 0.0f ? e2m1_nearest(x[j] / scale) : 0;
    const std::uint8_t high = scale != 0.0f ? e2m1_nearest(x[j + n / 2] / scale) : 0;
    out[j] = static_cast<std::uint8_t>(low | (high << 4));
  }
}

std::int64_t header_bytes(Fp4Format format) { return format == Fp4Format::nvfp4 ? 4 : 0; }

}  // namespace

void encode_mxfp4_block(const float* x, std::uint8_t* out) {
  const float amax = block_amax(x, kMxBlock);
  int exponent = -127;  // an all-zero block: e = 0
  if (amax > 0.0f) {
    int binary_exponent;
    std::frexp(amax, &binary_exponent);  // amax = m * 2^binary_exponent, m in [0.5, 1)
    exponent = std::clamp(binary_exponent - 1 - 2, -127, 127);
  }
  out[0] = static_cast<std::uint8_t>(exponent + 127);
  // x / 2^exponent is exact (a power-of-two scaling), so the only rounding is E2M1's.
  for (int j = 0; j < kMxBlock / 2; ++j) {
    const std::uint8_t low = e2m1_nearest(std::ldexp(x[j], -exponent));
    const std::uint8_t high = e2m1_nearest(std::ldexp(x[j + kMxBlock / 2], -exponent));
    out[1 + j] = static_cast<std::uint8_t>(low | (high << 4));
  }
}

void decode_mxfp4_block(const std::uint8_t* in, float* out) {
  const int exponent = static_cast<int>(in[0]) - 127;
  for (int j = 0; j < kMxBlock / 2; ++j) {
    out[j] = std::ldexp(e2m1_value(in[1 + j] & 0x0F), exponent);
    out[j + kMxBlock / 2] = std::ldexp(e2m1_value(in[1 + j] >> 4), exponent);
  }
}

std::string Fp4Quantizer::spec() const { return format_ == Fp4Format::mxfp4 ? "mxfp4" : "nvfp4"; }

void Fp4Quantizer::check_dim(int dim) const {
  const int block = block_values(format_);
  if (dim % block == 0) return;
  fail("quantizer spec '{}': head dim {} is not a multiple of {} ({} packs blocks of {} values along each vector)",
       spec(), dim, block, spec(), block);
}

EncodedTensor Fp4Quantizer::encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const {
  check_dim(dim);
  require_finite(tokens, dim, x, context);
  const int block = block_values(format_);
  const std::int64_t blocks = tokens * dim / block;
  EncodedTensor encoded{tokens, dim, std::vector<std::uint8_t>(
      static_cast<std::size_t>(header_bytes(format_) + blocks * block_bytes(format_)))};
  std::uint8_t* bytes = encoded.bytes.data();
  if (format_ == Fp4Format::mxfp4) {
    for (std::int64_t b = 0; b < blocks; ++b) encode_mxfp4_block(x + b * block, bytes + b * kMxBlockBytes);
    return encoded;
  }
  float amax = 0.0f;
  for (std::int64_t i = 0; i < tokens * dim; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float tensor_scale = amax > 0.0f ? amax / (kE2m1Max * kE4m3Max) : 1.0f;
  std::memcpy(bytes, &tensor_scale, 4);
  for (std::int64_t b = 0; b < blocks; ++b) {
    const float* block_x = x + b * kNvBlock;
    std::uint8_t* out = bytes + 4 + b * kNvBlockBytes;
    out[0] = float_to_fp8(block_amax(block_x, kNvBlock) / (kE2m1Max * tensor_scale), Fp8Format::e4m3fn);
    pack_e2m1(block_x, kNvBlock, fp8_to_float(out[0], Fp8Format::e4m3fn) * tensor_scale, out + 1);
  }
  return encoded;
}

void Fp4Quantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  check_dim(encoded.dim);
  const int block = block_values(format_);
  const std::int64_t blocks = encoded.tokens * encoded.dim / block;
  require_encoded_size(encoded, static_cast<std::size_t>(header_bytes(format_) + blocks * block_bytes(format_)),
                       spec());
  const std::uint8_t* bytes = encoded.bytes.data();
  if (format_ == Fp4Format::mxfp4) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      if (bytes[b * kMxBlockBytes] == 0xFF) fail_corrupt(spec(), context, "an E8M0 scale is NaN (0xFF)");
      decode_mxfp4_block(bytes + b * kMxBlockBytes, out + b * block);
    }
  } else {
    float tensor_scale;
    std::memcpy(&tensor_scale, bytes, 4);
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::uint8_t* in = bytes + 4 + b * kNvBlockBytes;
      const float scale = fp8_to_float(in[0], Fp8Format::e4m3fn);
      float* y = out + b * kNvBlock;
      for (int j = 0; j < kNvBlock / 2; ++j) {
        y[j] = e2m1_value(in[1 + j] & 0x0F) * scale * tensor_scale;
        y[j + kNvBlock / 2] = e2m1_value(in[1 + j] >> 4) * scale * tensor_scale;
      }
    }
  }
  require_finite_decoded(spec(), context, encoded.tokens, encoded.dim, out);
}

std::vector<MethodInfo> fp4_methods() {
  std::vector<MethodInfo> methods;
  const auto add = [&](Fp4Format format, std::string summary, std::string bits) {
    const std::string name = Fp4Quantizer(format).spec();
    methods.push_back({name, std::move(summary), {}, std::move(bits), {name},
                       [format](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
                         reader.finish({});
                         return std::make_unique<Fp4Quantizer>(format);
                       }});
  };
  add(Fp4Format::mxfp4, "OCP MXFP4: E2M1 values in blocks of 32 with an E8M0 (power-of-two) scale",
      "4.25 (17 bytes per 32)");
  add(Fp4Format::nvfp4, "NVIDIA NVFP4: E2M1 values in blocks of 16 with an E4M3 scale, and an fp32 scale per "
      "(layer, head) tensor", "4.5 + 32/(tokens*dim) (9 bytes per 16, 4 per tensor)");
  return methods;
}

}  // namespace tqlab
