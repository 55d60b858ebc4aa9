#include "engine/llamacpp_cache_types.h"

#include <cmath>
#include <cstdlib>

#include "core/dtype.h"
#include "core/error.h"
#include "blocks/iq4_blocks.h"
#include "blocks/legacy_blocks.h"

namespace tqlab {
namespace {

constexpr int kBlock = kQuantBlockSize;

// The one x86 q8 writer both q8_0 (cache rows and queries) and q8_1 (queries) share:
// ggml-cpu/arch/x86/quants.c quantize_row_q8_0 / quantize_row_q8_1. d is kept in float
// for q8_1's s; std::nearbyint rounds half to even in the default rounding mode, as
// _mm256_round_ps(_MM_ROUND_NEAREST) does.
float q8_codes_x86(const float* x, std::int8_t* codes) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < kBlock; ++j) codes[j] = static_cast<std::int8_t>(std::nearbyint(x[j] * id));
  return d;
}

// Writes n values block by block with the reference quantizer and reads them back; for the
// types with a minimum (q4_1, q5_1) also the fp16 minimum of each block.
template <typename Block>
void store_blocks(const float* x, float* y, std::size_t n, void (*quantize)(const float*, Block*, std::int64_t),
                  void (*dequantize)(const Block*, float*, std::int64_t), std::vector<float>* minimums = nullptr) {
  if (minimums != nullptr) minimums->resize(n / kBlock);
  for (std::size_t b = 0; b < n; b += kBlock) {
    Block block{};
    quantize(x + b, &block, kBlock);
    dequantize(&block, y + b, kBlock);
    if constexpr (requires { block.min_fp16; }) {
      if (minimums != nullptr) (*minimums)[b / kBlock] = half_to_float(block.min_fp16);
    }
  }
}

}  // namespace

const LlamaCppCacheType* find_llamacpp_cache_type(const std::string& spec) {
  // tqlab's float spellings name the same stored floats as ggml's.
  std::string name = spec;
  if (spec == "fp32") name = "f32";
  if (spec == "fp16") name = "f16";
  for (const LlamaCppCacheType& type : kLlamaCppCacheTypes) {
    if (name == type.name) return &type;
  }
  return nullptr;
}

std::vector<std::string> llamacpp_cache_type_names() {
  std::vector<std::string> names;
  for (const LlamaCppCacheType& type : kLlamaCppCacheTypes) names.emplace_back(type.name);
  return names;
}

std::uint16_t quantize_block_q8_0_x86(const float* x, std::int8_t* codes) {
  return float_to_half(q8_codes_x86(x, codes));
}

void store_rows(const LlamaCppCacheType& type, int rows, int dim, const float* x, StoredRows& out) {
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(dim);
  out.values.resize(n);
  out.minimums.clear();
  float* y = out.values.data();
  switch (type.type) {
    case LlamaCppType::f32:
      for (std::size_t i = 0; i < n; ++i) y[i] = x[i];
      return;
    case LlamaCppType::f16:
      for (std::size_t i = 0; i < n; ++i) y[i] = half_to_float(float_to_half(x[i]));
      return;
    case LlamaCppType::bf16:
      for (std::size_t i = 0; i < n; ++i) y[i] = bf16_to_float(float_to_bf16(x[i]));
      return;
    case LlamaCppType::q8_0:
      for (std::size_t b = 0; b < n; b += kBlock) {
        BlockQ8_0 block{};
        block.scale_fp16 = quantize_block_q8_0_x86(x + b, block.codes);
        dequantize_row_q8_0(&block, y + b, kBlock);
      }
      return;
    case LlamaCppType::q4_0:
      store_blocks<BlockQ4_0>(x, y, n, quantize_row_q4_0, dequantize_row_q4_0);
      return;
    case LlamaCppType::q5_0:
      store_blocks<BlockQ5_0>(x, y, n, quantize_row_q5_0, dequantize_row_q5_0);
      return;
    case LlamaCppType::iq4_nl:
      store_blocks<BlockIq4Nl>(x, y, n, quantize_row_iq4_nl, dequantize_row_iq4_nl);
      return;
    case LlamaCppType::q4_1:
      store_blocks<BlockQ4_1>(x, y, n, quantize_row_q4_1, dequantize_row_q4_1, &out.minimums);
      return;
    case LlamaCppType::q5_1:
      store_blocks<BlockQ5_1>(x, y, n, quantize_row_q5_1, dequantize_row_q5_1, &out.minimums);
      return;
  }
  throw InternalError("store_rows: unknown llama.cpp cache type");
}

void convert_query(QueryType type, int dim, const float* q, ConvertedQuery& out) {
  out.values.resize(static_cast<std::size_t>(dim));
  out.sum_correction.clear();
  float* y = out.values.data();
  switch (type) {
    case QueryType::f32:
      for (int i = 0; i < dim; ++i) y[i] = q[i];
      return;
    case QueryType::f16:
      for (int i = 0; i < dim; ++i) y[i] = half_to_float(float_to_half(q[i]));
      return;
    case QueryType::bf16:
      for (int i = 0; i < dim; ++i) y[i] = bf16_to_float(float_to_bf16(q[i]));
      return;
    case QueryType::q8_0:
    case QueryType::q8_1:
      for (int b = 0; b < dim; b += kBlock) {
        std::int8_t codes[kBlock];
        const float d = q8_codes_x86(q + b, codes);
        const float d16 = half_to_float(float_to_half(d));
        int sum = 0;
        for (int j = 0; j < kBlock; ++j) {
          y[b + j] = static_cast<float>(codes[j]) * d16;
          sum += codes[j];
        }
        if (type == QueryType::q8_1) {
          // s = fp16(d * sum(q)) with d in float (quantize_row_q8_1); the product uses s, not d16 * sum.
          const float s = half_to_float(float_to_half(d * static_cast<float>(sum)));
          out.sum_correction.push_back(static_cast<double>(s) - static_cast<double>(d16) * sum);
        }
      }
      return;
  }
  throw InternalError("convert_query: unknown query type");
}

float key_query_dot(int dim, const float* key, const float* key_minimums, const ConvertedQuery& query) {
  // Decoded products are exact in double (fp16 scales times small integers), so the sum
  // equals the kernels' integer block sums scaled; the kernels' float rounding is below
  // anything a perplexity sees.
  double sum = 0.0;
  for (int i = 0; i < dim; ++i) sum += static_cast<double>(key[i]) * query.values[static_cast<std::size_t>(i)];
  if (key_minimums != nullptr && !query.sum_correction.empty()) {
    for (int b = 0; b < dim / kBlock; ++b) {
      sum += static_cast<double>(key_minimums[b]) * query.sum_correction[static_cast<std::size_t>(b)];
    }
  }
  return static_cast<float>(sum);
}

}  // namespace tqlab
