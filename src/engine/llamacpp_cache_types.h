// The KV cache types llama.cpp's CPU backend offers (--cache-type-k/-v), as the
// llama.cpp engine stores them and converts queries for them. The one table of
// them is kLlamaCppCacheTypes (common/arg.cpp's kv_cache_types: f32, f16, bf16,
// q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1): a type there is accepted by
// `--engine llama.cpp`, listed, and checked by tests/cli/llamacpp_reference.sh,
// which reads the list from `tqlab list`.
//
// Sources (llama.cpp, read as a reference):
// - which type a query is converted to before K.Q: ggml/src/ggml-cpu/ggml-cpu.c,
//   type_traits_cpu[type].vec_dot_type (f32 -> f32, f16 -> f16, bf16 -> bf16,
//   q8_0, q4_0, q5_0 and iq4_nl -> q8_0, q4_1 and q5_1 -> q8_1), used by ggml-cpu/ops.cpp
//   ggml_compute_forward_flash_attn_ext_f16_one_chunk (q_to_vec_dot);
// - how a row is written to the cache: ggml-cpu's from_float of the cache type
//   (ggml_compute_forward_set_rows). For q8_0 on x86 that is
//   ggml-cpu/arch/x86/quants.c quantize_row_q8_0, which differs from the
//   reference quantizer: the codes are x * (127 / amax) rounded half to even
//   (_mm256_round_ps), where ggml-quants.c quantize_row_q8_0_ref takes
//   x * (1 / d) rounded half away from zero. q4_0, q4_1, q5_0, q5_1 and iq4_nl
//   are written by the reference quantizers (ggml-cpu/quants.c forwards
//   quantize_row_q4_0 ... quantize_row_iq4_nl to the _ref functions:
//   blocks/legacy_blocks.h, blocks/iq4_blocks.h). q8_1 (queries only) is
//   quantize_row_q8_1 of the same file: q8_0's codes plus s = fp16(d * sum(q)).
// - the K.Q products: ggml_vec_dot_q4_0_q8_0, _q5_0_q8_0, _iq4_nl_q8_0,
//   _q8_0_q8_0 (sum over blocks of d_k d_q sum(qk qq)), ggml_vec_dot_q4_1_q8_1
//   and _q5_1_q8_1 (plus m_k s_q per block: the query's block sum enters
//   through its fp16 s, not through its codes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tqlab {

/// The type a query is converted to before the K.Q product.
enum class QueryType : std::uint8_t { f32, f16, bf16, q8_0, q8_1 };

enum class LlamaCppType : std::uint8_t { f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1 };

struct LlamaCppCacheType {
  const char* name;        ///< ggml's type name, as --cache-type-k takes it
  LlamaCppType type;
  bool quantized;          ///< ggml_is_quantized: the cache is rotated for it (llama_kv_cache)
  int block_values;        ///< values per block (1 for float types)
  int block_bytes;         ///< bytes per block
  QueryType query;         ///< type_traits_cpu[type].vec_dot_type
};

inline constexpr LlamaCppCacheType kLlamaCppCacheTypes[] = {
    {"f32", LlamaCppType::f32, false, 1, 4, QueryType::f32},
    {"f16", LlamaCppType::f16, false, 1, 2, QueryType::f16},
    {"bf16", LlamaCppType::bf16, false, 1, 2, QueryType::bf16},
    {"q8_0", LlamaCppType::q8_0, true, 32, 34, QueryType::q8_0},
    {"q4_0", LlamaCppType::q4_0, true, 32, 18, QueryType::q8_0},
    {"q4_1", LlamaCppType::q4_1, true, 32, 20, QueryType::q8_1},
    {"iq4_nl", LlamaCppType::iq4_nl, true, 32, 18, QueryType::q8_0},
    {"q5_0", LlamaCppType::q5_0, true, 32, 22, QueryType::q8_0},
    {"q5_1", LlamaCppType::q5_1, true, 32, 24, QueryType::q8_1},
};

/// The table row of a cache type given as tqlab spells it ("q4_0", "f16", "fp16",
/// "bf16", "fp32", ...), or null when llama.cpp has no such cache type.
const LlamaCppCacheType* find_llamacpp_cache_type(const std::string& spec);

/// The names of kLlamaCppCacheTypes, in table order.
std::vector<std::string> llamacpp_cache_type_names();

/// Rows as the cache stores them, decoded: what the flash-attention kernel reads.
/// `minimums` gets one float per block (q4_1, q5_1: the block's fp16 minimum m, which
/// the K.Q product with a q8_1 query needs apart); empty for other types.
struct StoredRows {
  std::vector<float> values;    ///< rows x dim
  std::vector<float> minimums;  ///< rows x dim / 32 (q4_1, q5_1 only)
};

/// Writes `rows` rows of `dim` floats (dim a multiple of the type's block) to a
/// cache of `type` and reads them back (out: rows x dim, plus q4_1's and q5_1's minimums).
void store_rows(const LlamaCppCacheType& type, int rows, int dim, const float* x, StoredRows& out);

/// A query converted to its vec-dot type, decoded: values (dim floats) and, for
/// q8_1, per block the difference between its fp16 s and the block sum of its
/// decoded values (the term m_k * s the q4_1 product adds beyond sum k q).
struct ConvertedQuery {
  std::vector<float> values;
  std::vector<double> sum_correction;  ///< dim / 32 (q8_1 only)
};

/// Converts one query row of `dim` floats to `type`.
void convert_query(QueryType type, int dim, const float* q, ConvertedQuery& out);

/// x86 SIMD q8_0 writer of one block of 32 values: fp16 scale amax / 127, codes
/// round-half-even(x * (127 / amax)). codes: 32 values; returns the fp16 scale bits.
std::uint16_t quantize_block_q8_0_x86(const float* x, std::int8_t* codes);

/// The K.Q product of one stored key row with one converted query, as the vec-dot
/// kernel of the key's type computes it (to float precision; summed in double).
/// key_minimums: the row's q4_1 / q5_1 block minimums (null otherwise).
float key_query_dot(int dim, const float* key, const float* key_minimums, const ConvertedQuery& query);

}  // namespace tqlab
