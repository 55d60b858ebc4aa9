// How a token sequence is cut into chunks for the end-to-end commands: `chunks`
// consecutive, disjoint chunks of `ctx` tokens from the start (0: every whole
// chunk the tokens hold), each a prefill of its own.
#pragma once

#include <cstddef>
#include <string>

#include "model/model_config.h"

namespace tqlab {

/// How the user wrote the options, for messages: flags ("--ctx") or config keys ("model.ctx").
struct ChunkOptionNames {
  std::string ctx = "--ctx";
  std::string chunks = "--chunks";
  std::string tokens = "--tokens";
  std::string bos = "--bos";
};

/// The number of chunks to run. InputError, naming the options and the token source
/// `tokens_name`, for ctx below `min_ctx`, ctx past the model's sliding window, fewer
/// tokens than one chunk, a negative chunk count or more chunks than the tokens hold,
/// and `bos` on a model without bos_token_id.
int plan_chunks(const ModelConfig& config, std::size_t tokens, const std::string& tokens_name, int ctx, int chunks,
                bool bos, int min_ctx, const ChunkOptionNames& names);

}  // namespace tqlab
