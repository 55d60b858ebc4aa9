#include "model/chunking.h"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/error.h"

namespace tqlab {

int plan_chunks(const ModelConfig& config, std::size_t tokens, const std::string& tokens_name, int ctx, int chunks,
                bool bos, int min_ctx, const ChunkOptionNames& names) {
  if (ctx < min_ctx) {
    fail("{} {}: a chunk needs at least {}", names.ctx, ctx,
         min_ctx == 1 ? "one token" : fmt::format("{} tokens (one predicts the next)", min_ctx));
  }
  check_context(config, ctx, names.ctx.c_str());
  const auto available = static_cast<std::int64_t>(tokens) / ctx;
  if (available == 0) {
    fail("{} '{}' holds {} tokens, fewer than one chunk of {} {}", names.tokens, tokens_name, tokens, names.ctx, ctx);
  }
  if (chunks < 0) fail("{} {} is negative; give a count, or 0 for every whole chunk", names.chunks, chunks);
  if (chunks > available) {
    fail("{} {} needs {} tokens at {} {}; '{}' holds {} ({} whole chunks)", names.chunks, chunks,
         static_cast<std::int64_t>(chunks) * ctx, names.ctx, ctx, tokens_name, tokens, available);
  }
  if (bos && !config.bos_token_id) fail("{}: '{}' has no bos_token_id", names.bos, config.path);
  return chunks > 0 ? chunks : static_cast<int>(std::min<std::int64_t>(available, INT32_MAX));
}

}  // namespace tqlab
