#include "model/kv_hook.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "kv/fake_quantize.h"

namespace tqlab {

void fill_layer_cache(const KvCacheQuantization& quantization, int layer, int tokens, int kv_heads, int head_dim,
                      std::int64_t stride, const float* k, const float* v, float* k_cache, float* v_cache,
                      KvCacheBytes& bytes, const std::string& where, Workers& workers) {
  const auto l = static_cast<std::size_t>(layer);
  std::vector<std::size_t> item_bytes(2 * static_cast<std::size_t>(kv_heads));
  const auto row_bytes = static_cast<std::size_t>(head_dim) * sizeof(float);
  workers.run(item_bytes.size(), [&](std::size_t item, int worker) {
    const bool keys = item % 2 == 0;
    const int head = static_cast<int>(item / 2);
    const float* x = keys ? k : v;
    float* cache = keys ? k_cache : v_cache;
    const Quantizer& quantizer = *(keys ? quantization.key : quantization.value)[l][static_cast<std::size_t>(head)];
    const std::ptrdiff_t column = static_cast<std::ptrdiff_t>(head) * head_dim;
    std::vector<float>& rows = workers.floats(worker, WorkerBuffer::rows);
    std::vector<float>& decoded = workers.floats(worker, WorkerBuffer::decoded);
    rows.resize(static_cast<std::size_t>(tokens) * static_cast<std::size_t>(head_dim));
    decoded.resize(rows.size());
    for (int t = 0; t < tokens; ++t)
      std::memcpy(rows.data() + static_cast<std::ptrdiff_t>(t) * head_dim, x + t * stride + column, row_bytes);
    const QuantContext context{quantization.seed, keys ? Role::key : Role::value, layer, head};
    item_bytes[item] = fake_quantize_rows(quantizer, context, tokens, head_dim, rows.data(), decoded.data(),
                                          fmt::format("{}, layer {}, kv head {}, {}", where, layer, head,
                                                      keys ? "keys" : "values"));
    for (int t = 0; t < tokens; ++t)
      std::memcpy(cache + t * stride + column, decoded.data() + static_cast<std::ptrdiff_t>(t) * head_dim, row_bytes);
  });
  for (auto* per_head : {&bytes.key_head, &bytes.value_head}) {
    if (per_head->size() <= l) per_head->resize(l + 1);
    (*per_head)[l].resize(static_cast<std::size_t>(kv_heads), 0);
  }
  for (std::size_t item = 0; item < item_bytes.size(); ++item) {
    (item % 2 == 0 ? bytes.key : bytes.value)[l] += item_bytes[item];
    (item % 2 == 0 ? bytes.key_head : bytes.value_head)[l][item / 2] += item_bytes[item];
  }
  const auto values =
      static_cast<std::uint64_t>(tokens) * static_cast<std::uint64_t>(kv_heads) * static_cast<std::uint64_t>(head_dim);
  bytes.key_values[l] += values;
  bytes.value_values[l] += values;

  // The rows every query reads exact: sinks, and a tail window (ExactTokens with the chunk as its sequence).
  const ChunkGeometry chunk{0, tokens};
  const ExactTokens& exact = quantization.exact;
  std::vector<std::pair<int, int>> exact_rows{exact.ranges(chunk, 0, tokens)[0]};
  if (exact.mode == WindowMode::tail) exact_rows.push_back(exact.ranges(chunk, tokens - 1, tokens)[1]);
  const auto width = static_cast<std::size_t>(kv_heads) * row_bytes;
  for (const auto& [first, last] : exact_rows) {
    for (int t = first; t < last; ++t) {
      std::memcpy(k_cache + t * stride, k + t * stride, width);
      std::memcpy(v_cache + t * stride, v + t * stride, width);
    }
  }
}

}  // namespace tqlab
