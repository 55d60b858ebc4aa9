#include "metrics/attention_geometry.h"

#include <algorithm>

namespace tqlab {

std::vector<ChunkGeometry> split_chunks(int tokens, int chunk) {
  std::vector<ChunkGeometry> chunks;
  for (int start = 0; start < tokens; start += chunk) chunks.push_back({start, std::min(chunk, tokens - start)});
  return chunks;
}

std::array<std::pair<int, int>, 2> ExactTokens::ranges(const ChunkGeometry& chunk, int i, int keys) const {
  std::pair<int, int> sinks{0, std::clamp(sink - chunk.start, 0, keys)};
  std::pair<int, int> recent{0, 0};
  if (window > 0) {
    if (mode == WindowMode::recent) {
      recent = {std::max(0, i - window + 1), std::min(i + 1, keys)};
    } else {
      recent = {std::max(0, chunk.tokens - window), keys};
    }
    if (recent.first > recent.second) recent = {0, 0};
  }
  return {sinks, recent};
}

int ExactTokens::cached_exact_tokens(int tokens, int chunk) const {
  int exact = 0;
  for (const ChunkGeometry& piece : split_chunks(tokens, chunk)) {
    const int window_first = piece.start + std::max(0, piece.tokens - window);
    const int sink_end = std::min(sink, piece.start + piece.tokens);
    // Tokens of this chunk that are sinks, or in its last W: [start, sink_end) U [window_first, end).
    const int end = piece.start + piece.tokens;
    const int sinks = std::max(0, sink_end - piece.start);
    const int tail = window > 0 ? end - std::max(window_first, std::max(sink_end, piece.start)) : 0;
    exact += sinks + std::max(0, tail);
  }
  return exact;
}

}  // namespace tqlab
