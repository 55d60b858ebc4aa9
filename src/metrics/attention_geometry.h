// Which keys a query attends and which of them a run keeps exact
// (docs/SWEEP.md#metrics, attention).
//
// Tokens are split into chunks of `chunk`; attention never crosses chunks or
// sequences. In a chunk of n tokens, chunk-local query i attends keys 0..i
// (causal) or 0..n-1 (bidirectional). A run keeps keys and values exact:
//   sink=S:  the first S tokens of each sequence (absolute positions 0..S-1;
//            only the chunks that contain them are affected);
//   window=W, recent: for query i, keys i-W+1..i (the W most recent tokens,
//            the query's own among them), as a cache holds them while decoding;
//            bidirectional attention keeps the same keys (none after i);
//   window=W, tail:   the last W tokens of each chunk, n-W..n-1, for every
//            query, as a cache filled by one prefill holds them.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/name_table.h"

namespace tqlab {

/// Which tokens a residual window keeps exact.
enum class WindowMode {
  recent,  ///< for query t, the W most recent tokens t-W+1..t (a cache while decoding)
  tail,    ///< the last W tokens of each chunk, for every query (a cache filled by one prefill)
};

inline constexpr auto kWindowModeNames =
    make_name_table<WindowMode>({{WindowMode::recent, "recent"}, {WindowMode::tail, "tail"}});

/// "recent", "tail".
inline std::string_view window_mode_name(WindowMode mode) { return kWindowModeNames.name(mode); }
/// Inverse of window_mode_name; nullopt for any other word.
inline std::optional<WindowMode> parse_window_mode(std::string_view name) { return kWindowModeNames.parse(name); }

/// How attention is computed over a dump: its chunks, mask, logit scale and window mode.
struct AttentionConfig {
  int chunk = 2048;                   ///< tokens per chunk; attention never crosses chunks
  bool causal = true;                 ///< query t attends keys up to t (else the whole chunk)
  std::optional<double> scale;        ///< logit scale; nullopt: 1/sqrt(key head dim)
  WindowMode window_mode = WindowMode::recent;
};

/// A chunk: tokens [start, start + tokens) of a sequence.
struct ChunkGeometry {
  int start = 0;
  int tokens = 0;
};

/// Chunks of `chunk` tokens covering [0, tokens); the last one may be shorter.
std::vector<ChunkGeometry> split_chunks(int tokens, int chunk);

/// Keys query i (chunk-local) attends: i + 1 when causal, else the whole chunk.
inline int attended_keys(const ChunkGeometry& chunk, bool causal, int i) { return causal ? i + 1 : chunk.tokens; }

/// The tokens a run keeps exact.
struct ExactTokens {
  int sink = 0;
  int window = 0;
  WindowMode mode = WindowMode::recent;

  bool any() const { return sink > 0 || window > 0; }

  /// The chunk-local key ranges [first, last) kept exact for query i among its
  /// `keys` attended keys: the sink range, then the window range (either may
  /// be empty; they may overlap). Returns them as two pairs.
  std::array<std::pair<int, int>, 2> ranges(const ChunkGeometry& chunk, int i, int keys) const;

  /// Tokens a cache holds exact at the end of a sequence of `tokens` tokens
  /// cut into chunks of `chunk`: the sinks and each chunk's last W tokens
  /// (recent and tail alike), each counted once. For bits_kv_effective.
  int cached_exact_tokens(int tokens, int chunk) const;
};

}  // namespace tqlab
