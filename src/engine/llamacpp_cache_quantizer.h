// llama.cpp's KV cache as a quantizer of one head's rows (tokens x head_dim, Hugging
// Face's channel order), for `tqlab roundtrip --engine llama.cpp`: what its cache
// stores for them, read back in the order they came in (engine/llamacpp_engine.h,
// rules 1-3):
//   encode  keys moved to GGML's channel order (rule 1); rotated by the Walsh-Hadamard
//           blocks when the type is quantized, the rotation is on and head_dim % 64 == 0
//           (rule 2: keys over the widest power-of-two block, values over 64); written
//           by the type's cache writer (rule 3: q8_0 by the x86 writer, ties to even;
//           the others by ggml's reference quantizers, which tqlab's plain spec of the
//           type reproduces byte for byte). The bytes are the cache's blocks.
//   decode  the blocks decoded, the rotation applied again (H H = I, in float: what
//           llama.cpp's attention output gets for values; keys are never rotated back
//           there, the query is rotated instead, so this is the values the keys stand
//           for), the channels put back in Hugging Face's order.
// Queries are not the cache's: the engine converts them (rule 4), which a roundtrip of
// stored rows does not model; the caller refuses them.
#pragma once

#include <memory>

#include "engine/llamacpp_cache_types.h"
#include "quant/quantizer.h"

namespace tqlab {

/// The cache of `type` as a quantizer; `rotation` as the engine's option (rot=on|off).
std::unique_ptr<Quantizer> make_llamacpp_cache_quantizer(const LlamaCppCacheType& type, bool rotation);

}  // namespace tqlab
