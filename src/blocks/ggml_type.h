// GGML's tensor element types: every type id ggml's ggml.h defines (enum ggml_type, ggml 0.9.x /
// llama.cpp of 2026, GGML_TYPE_COUNT = 43), its name, block size and bytes per block as ggml's
// type_traits table in ggml.c gives them, and the decoding of a row of blocks into floats.
//
// Ids ggml retired (4, 5: Q4_2/Q4_3; 31-33: Q4_0_4_4..Q4_0_8_8; 36-38: IQ4_NL_4_4..8_8) are not
// types: ggml_type_traits returns nullptr for them as for any id >= 43. The block layouts tqlab
// decodes are in the headers of this folder (blocks/*.h), one per family, each with its source.
#pragma once

#include <cstdint>

namespace tqlab {

/// ggml's enum ggml_type, value for value (ggml/include/ggml.h).
enum class GgmlType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
};

/// One past the largest id ggml defines (GGML_TYPE_COUNT).
inline constexpr std::uint32_t kGgmlTypeCount = 43;

/// The facts about one ggml type.
struct GgmlTypeTraits {
  const char* name;        ///< ggml's name (ggml_type_name), e.g. "q4_K", "bf16"
  std::int64_t block_values;  ///< values per block (ggml_blck_size); 1 for F32, F16, BF16 and the integers
  std::int64_t block_bytes;   ///< bytes per block (ggml_type_size)
  bool decodable;          ///< dequantize_ggml_row decodes it
};

/// The traits of type id `type_id`; nullptr for an id ggml does not define (retired or >= 43).
const GgmlTypeTraits* ggml_type_traits(std::uint32_t type_id);

/// The traits of `type` (never null for an enumerator).
const GgmlTypeTraits& ggml_type_traits(GgmlType type);

/// Decodes one row: y[0..n) = the values of the n / block_values blocks at x (n * block_bytes /
/// block_values bytes, read unaligned), bit-identical to ggml's dequantize_row_* (to_float) for the
/// type. n must be a multiple of the type's block_values (InputError otherwise). A type tqlab cannot
/// decode (traits.decodable false) is an InputError naming the type.
void dequantize_ggml_row(GgmlType type, const void* x, float* y, std::int64_t n);

}  // namespace tqlab
