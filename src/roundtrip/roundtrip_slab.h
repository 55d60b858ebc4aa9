// One (sequence, head) slab of `tqlab roundtrip`: fake-quantized and handed
// on, rounded to the tensor's dtype, as the output file holds it. Shared by
// the streamed roundtrip (roundtrip/roundtrip.cpp) and its in-memory reference
// (roundtrip/roundtrip_reference.cpp).
//
// A slab of a long context is large (32768 tokens x 128 f32 = 16 MiB). When
// the quantizer encodes each token on its own (Quantizer::
// encodes_tokens_independently), the streamed roundtrip takes it in pieces
// of about 256 KiB of rows: a piece is read from the file (pread, where the
// slab is one run of f32, f16 or bf16: nothing is mapped), decoded, measured
// and written while it is still in the core's cache, and a worker's buffers
// stay a few hundred KiB whatever the context length. The output bytes,
// packed-byte counts and error sums are the same to the bit as for the whole
// slab at once.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "roundtrip/roundtrip_plan.h"

namespace tqlab {

/// What one (sequence, head) slab contributes to its tensor's result.
struct SlabOutcome {
  std::uint64_t encoded_bytes = 0;
  double squared_error = 0;  ///< sum over the slab, in [token][dim] order
  double energy = 0;
};

/// A worker's buffers for roundtrip_slab (reused from slab to slab).
struct SlabBuffers {
  std::vector<float> input;             ///< values read (converted) from the file: one piece, or the slab
  std::vector<std::byte> raw;           ///< one piece as the file stores it (f16, bf16; copied bytes)
  std::vector<float> decoded, rounded;  ///< one piece: rows * dim; rounded: decoded as stored
  std::vector<std::byte> stored;        ///< one piece in the tensor's dtype (not f32)
};

/// How roundtrip_slab cuts a slab.
enum class SlabPieces {
  whole,        ///< one piece: the plain path, kept as the reference
  cache_sized,  ///< pieces of kSlabPieceValues values where the quantizer allows it
};

/// Values in one piece of SlabPieces::cache_sized (256 KiB of f32).
inline constexpr std::int64_t kSlabPieceValues = std::int64_t{1} << 16;

/// Tokens in one cache-sized piece of vectors of `dim` values: kSlabPieceValues / dim
/// rounded down to a multiple of 8, at least 8. A multiple of 8 keeps every piece but
/// the last a whole number of packed bytes (any bit width) and of error-sum lanes.
std::int64_t slab_piece_tokens(int dim);

/// Receives rows [first_token, first_token + n) of a slab as the file holds them:
/// n * dim elements of the tensor's dtype, [token][dim], little-endian.
using SlabRowsSink = std::function<void(std::int64_t first_token, std::span<const std::byte> rows)>;

/// Fake-quantizes slab (seq, head) of `tensor` and hands its rows, rounded to
/// the tensor's dtype, to `sink` in token order (one call per piece).
/// Throws InputError naming the file, tensor, sequence, head and token when
/// the quantizer refuses the input or a decoded value does not fit the dtype:
/// the same message for any `pieces` (pieces before the failing one have
/// reached the sink by then).
SlabOutcome roundtrip_slab(const RoundtripPlan& plan, const QuantizedTensor& tensor, int seq, int head,
                           std::uint64_t seed, SlabPieces pieces, SlabBuffers& buffers, const SlabRowsSink& sink);

}  // namespace tqlab
