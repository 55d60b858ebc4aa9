// The byte layout vLLM's TurboQuant cache gives one (token, kv head) vector,
// shared by its key and value formats (vllm_key_quantizer.h,
// vllm_value_quantizer.h): the b-bit codes of the D values packed back to back,
// least significant bit first (core/bit_pack.h: 4-bit codes two per byte, the
// first in the low nibble; 3-bit codes eight per three bytes), then fp16 side
// values, each little-endian. Source: vLLM,
// vllm/model_executor/layers/quantization/turboquant/config.py
// (TurboQuantConfig.key_packed_size, value_packed_size) and
// vllm/v1/attention/ops/triton_turboquant_store.py (_tq_fused_store_mse,
// _store_quantized_value), which write exactly these bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/bit_pack.h"

namespace tqlab {

/// Bytes of the packed codes of one vector: ceil(dim * bits / 8).
constexpr std::size_t vllm_code_bytes(int dim, int bits) {
  return packed_bytes(static_cast<std::size_t>(dim), bits);
}

/// Writes an fp16 bit pattern little-endian at `out` (2 bytes).
inline void put_half_le(std::uint16_t bits, std::uint8_t* out) {
  out[0] = static_cast<std::uint8_t>(bits & 0xFFu);
  out[1] = static_cast<std::uint8_t>(bits >> 8);
}

/// Reads a little-endian fp16 bit pattern from `in` (2 bytes).
inline std::uint16_t get_half_le(const std::uint8_t* in) {
  return static_cast<std::uint16_t>(in[0] | (in[1] << 8));
}

/// True when an fp16 bit pattern is neither Inf nor NaN.
constexpr bool half_is_finite(std::uint16_t bits) { return (bits & 0x7C00u) != 0x7C00u; }

}  // namespace tqlab
