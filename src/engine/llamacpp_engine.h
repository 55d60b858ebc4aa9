// The llama.cpp engine: what llama.cpp's CPU build does with a KV cache of the
// given K and V types (--cache-type-k / --cache-type-v), flash attention on.
// Rule by rule, with the source each follows (llama.cpp, read as a reference;
// docs/ENGINES.md has the measured effect of each):
//
// 1. Channel order. llama.cpp's converter permutes the rows of the q and k
//    projections (convert_hf_to_gguf.py / conversion/llama.py LlamaModel.permute)
//    so that its RoPE (ggml-cpu ops.cpp, rope in normal mode) rotates adjacent
//    pairs: stored channel 2i is Hugging Face channel i, 2i + 1 is i + head_dim/2.
//    Its K cache and its queries are in that order, so a block of 32 holds other
//    channels than in Hugging Face's order.
// 2. Rotation. When K's type is quantized (ggml_is_quantized) and head_dim % 64 == 0,
//    Q and K are multiplied by an orthonormal Walsh-Hadamard matrix over blocks of
//    the largest power of two n >= 64 dividing head_dim; when V's type is quantized,
//    V is, over blocks of 64, and the attention output is multiplied by it again
//    (H H = I) (src/llama-kv-cache.cpp: llama_kv_cache::llama_kv_cache attn_rot_k /
//    attn_rot_v, build_input_k_rot / build_input_v_rot, ggml_gen_hadamard;
//    src/llama-graph.cpp llm_graph_context::build_attn; the product is
//    ggml-cpu ops.cpp ggml_compute_forward_fwht: scale by 1/sqrt(n), then
//    butterflies of width 1, 2, 4, ...). LLAMA_ATTN_ROT_DISABLE=1 turns it off:
//    the option rot=off.
// 3. Cache writes: each type's ggml-cpu writer (engine/llamacpp_cache_types.h;
//    q8_0 on x86 rounds ties to even).
// 4. The query converted to K's vec-dot type before K.Q, and f16 accumulation of
//    values with an f16 V (engine/llamacpp_attention.h).
#pragma once

#include "engine/engine.h"

namespace tqlab {

class LlamaCppEngine final : public Engine {
 public:
  explicit LlamaCppEngine(bool rotation) : rotation_(rotation) {}
  std::string spelling() const override;
  std::string supports() const override;
  std::vector<std::string> cache_types() const override;
  std::string quantizer_spec(const std::string& cache_type) const override;
  void check_run(const EngineRunRequest& request) const override;
  std::unique_ptr<Quantizer> cache_quantizer(const std::string& cache_type) const override;
  std::unique_ptr<EngineCache> bind(const std::string& k, const std::string& v, int head_dim) const override;

 private:
  bool rotation_;
};

/// The Walsh-Hadamard product of ggml_compute_forward_fwht on every block of n
/// floats of x (size a multiple of n, n a power of two), in place.
void llamacpp_hadamard_blocks(int n, std::size_t size, float* x);

/// The width of K's rotation blocks for head_dim (llama_kv_cache::build_input_k_rot):
/// the largest power of two n >= 64 with head_dim % n == 0; 0 when head_dim % 64 != 0.
int llamacpp_key_rotation_width(int head_dim);

}  // namespace tqlab
