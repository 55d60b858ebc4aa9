#include "engine/llamacpp_engine.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "engine/llamacpp_attention.h"
#include "engine/llamacpp_cache_quantizer.h"
#include "engine/llamacpp_cache_types.h"

namespace tqlab {
namespace {

const LlamaCppCacheType& cache_type(const std::string& spec) {
  const LlamaCppCacheType* type = find_llamacpp_cache_type(spec);
  if (type == nullptr) throw InternalError("llama.cpp engine: unchecked cache type " + spec);
  return *type;
}

// Rows of one head (tokens x dim) out of a token-major tensor, channels moved from
// Hugging Face's rotate-half order to ggml's adjacent pairs when `ggml_order`
// (LlamaModel.permute: stored channel 2i = i, 2i + 1 = i + dim/2).
void gather_head(int tokens, int dim, const float* x, std::int64_t stride, int head, bool ggml_order,
                 std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(tokens) * static_cast<std::size_t>(dim));
  const int half = dim / 2;
  for (int t = 0; t < tokens; ++t) {
    const float* in = x + t * stride + static_cast<std::ptrdiff_t>(head) * dim;
    float* row = out.data() + static_cast<std::ptrdiff_t>(t) * dim;
    if (!ggml_order) {
      std::memcpy(row, in, static_cast<std::size_t>(dim) * sizeof(float));
      continue;
    }
    for (int i = 0; i < half; ++i) {
      row[2 * i] = in[i];
      row[2 * i + 1] = in[i + half];
    }
  }
}

class LlamaCppCache final : public EngineCache {
 public:
  LlamaCppCache(const LlamaCppCacheType& k, const LlamaCppCacheType& v, int head_dim, bool rotation) : k_(k), v_(v) {
    const bool rotatable = head_dim % 64 == 0;
    k_rotation_ = rotation && rotatable && k.quantized ? llamacpp_key_rotation_width(head_dim) : 0;
    v_rotation_ = rotation && rotatable && v.quantized ? 64 : 0;
  }

  void attend(const EngineAttentionInput& in, float* out, std::uint64_t& key_bytes,
              std::uint64_t& value_bytes) const override {
    const int dim = in.head_dim;
    const std::size_t head_size = static_cast<std::size_t>(in.tokens) * static_cast<std::size_t>(dim);
    // ggml_compute_forward_flash_attn_ext_f16: same-type f32/f16 caches with a batch of at
    // least GGML_FA_TILE_Q queries take the tiled kernel (f32 query, f32 sums).
    const bool tiled = k_.type == v_.type && (k_.type == LlamaCppType::f32 || k_.type == LlamaCppType::f16) &&
                       in.tokens >= kTiledMinQueries;
    std::vector<std::vector<float>> k_exact(static_cast<std::size_t>(in.kv_heads));
    std::vector<std::vector<float>> v_exact(k_exact.size());
    std::vector<StoredRows> k_stored(k_exact.size()), v_stored(k_exact.size());
    for (int g = 0; g < in.kv_heads; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      gather_head(in.tokens, dim, in.k, in.kv_stride, g, true, k_exact[gi]);
      gather_head(in.tokens, dim, in.v, in.kv_stride, g, false, v_exact[gi]);
      if (k_rotation_ > 0) llamacpp_hadamard_blocks(k_rotation_, head_size, k_exact[gi].data());
      if (v_rotation_ > 0) llamacpp_hadamard_blocks(v_rotation_, head_size, v_exact[gi].data());
      store_rows(k_, in.tokens, dim, k_exact[gi].data(), k_stored[gi]);
      store_rows(v_, in.tokens, dim, v_exact[gi].data(), v_stored[gi]);
    }
    std::vector<float> q, o(head_size);
    const int group = in.q_heads / in.kv_heads;
    for (int h = 0; h < in.q_heads; ++h) {
      const auto gi = static_cast<std::size_t>(h / group);
      gather_head(in.tokens, dim, in.q, in.q_stride, h, true, q);
      if (k_rotation_ > 0) llamacpp_hadamard_blocks(k_rotation_, head_size, q.data());
      FlashAttentionHead head;
      head.tokens = in.tokens;
      head.dim = dim;
      head.scale = in.scale;
      head.q = q.data();
      head.k_cache = k_stored[gi].values.data();
      head.k_minimums = k_stored[gi].minimums.empty() ? nullptr : k_stored[gi].minimums.data();
      head.v_cache = v_stored[gi].values.data();
      head.k_exact = k_exact[gi].data();
      head.v_exact = v_exact[gi].data();
      head.query = tiled ? QueryType::f32 : k_.query;
      head.f16_accumulation = !tiled && v_.type == LlamaCppType::f16;
      head.prefill = in.prefill;
      flash_attention_head(head, o.data());
      if (v_rotation_ > 0) llamacpp_hadamard_blocks(v_rotation_, head_size, o.data());
      for (int t = 0; t < in.tokens; ++t) {
        std::memcpy(out + t * in.q_stride + static_cast<std::ptrdiff_t>(h) * dim,
                    o.data() + static_cast<std::ptrdiff_t>(t) * dim, static_cast<std::size_t>(dim) * sizeof(float));
      }
    }
    const std::uint64_t values = static_cast<std::uint64_t>(head_size) * static_cast<std::uint64_t>(in.kv_heads);
    key_bytes += values / static_cast<std::uint64_t>(k_.block_values) * static_cast<std::uint64_t>(k_.block_bytes);
    value_bytes += values / static_cast<std::uint64_t>(v_.block_values) * static_cast<std::uint64_t>(v_.block_bytes);
  }

 private:
  const LlamaCppCacheType& k_;
  const LlamaCppCacheType& v_;
  int k_rotation_ = 0, v_rotation_ = 0;
};

}  // namespace

void llamacpp_hadamard_blocks(int n, std::size_t size, float* x) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (std::size_t start = 0; start < size; start += static_cast<std::size_t>(n)) {
    float* row = x + start;
    for (int j = 0; j < n; ++j) row[j] *= scale;
    for (int len = 1; len < n; len <<= 1) {
      for (int i = 0; i < n; i += 2 * len) {
        for (int j = 0; j < len; ++j) {
          const float u = row[i + j];
          const float v = row[i + len + j];
          row[i + j] = u + v;
          row[i + len + j] = u - v;
        }
      }
    }
  }
}

int llamacpp_key_rotation_width(int head_dim) {
  if (head_dim <= 0 || head_dim % 64 != 0) return 0;
  int n = 64;
  while (head_dim % (2 * n) == 0) n *= 2;
  return n;
}

std::string LlamaCppEngine::spelling() const { return rotation_ ? "llama.cpp" : "llama.cpp:rot=off"; }

std::string LlamaCppEngine::supports() const {
  return fmt::format(
      "engine llama.cpp takes --k/--v from {} (one type for every layer and head; a sweep config's specs "
      "may give each layer its own), the option "
      "rot=off (LLAMA_ATTN_ROT_DISABLE=1), --prefill quantized|exact C, and no --window or --sink",
      fmt::join(llamacpp_cache_type_names(), ", "));
}

std::string LlamaCppEngine::quantizer_spec(const std::string& cache_type) const {
  if (cache_type == "f16") return "fp16";
  if (cache_type == "f32") return "fp32";
  return cache_type;
}

std::vector<std::string> LlamaCppEngine::cache_types() const { return llamacpp_cache_type_names(); }

std::unique_ptr<Quantizer> LlamaCppEngine::cache_quantizer(const std::string& cache_type) const {
  return make_llamacpp_cache_quantizer(tqlab::cache_type(cache_type), rotation_);
}

void LlamaCppEngine::check_run(const EngineRunRequest& request) const {
  const auto refuse = [&](const std::string& what) {
    fail("{}: {} with engine {}; {}", request.where, what, spelling(), supports());
  };
  // llama_kv_cache keeps one tensor per layer for keys and one for values, every head at its type: a
  // layer's type can differ (as ik_llama.cpp's ranges do), a head's cannot.
  if (request.per_head) refuse("K or V given per head");
  std::vector<const std::string*> specs{&request.k, &request.v};
  for (const std::string& spec : request.layer_specs) specs.push_back(&spec);
  for (const auto* spec : specs) {
    if (find_llamacpp_cache_type(*spec) == nullptr) refuse(fmt::format("cache type '{}'", *spec));
  }
  if (request.window != 0) refuse(fmt::format("window {}", request.window));
  if (request.sink != 0) refuse(fmt::format("sink {}", request.sink));
  if (request.head_dim > 0) {
    for (const auto* spec : specs) {
      const LlamaCppCacheType& type = cache_type(*spec);
      if (request.head_dim % type.block_values != 0 || request.head_dim % 2 != 0) {
        refuse(
            fmt::format("cache type {} at head dim {} (blocks of {})", type.name, request.head_dim, type.block_values));
      }
    }
  }
}

std::unique_ptr<EngineCache> LlamaCppEngine::bind(const std::string& k, const std::string& v, int head_dim) const {
  return std::make_unique<LlamaCppCache>(cache_type(k), cache_type(v), head_dim, rotation_);
}

}  // namespace tqlab
