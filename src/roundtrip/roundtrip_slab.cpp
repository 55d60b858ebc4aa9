#include "roundtrip/roundtrip_slab.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/text.h"
#include "kv/kv_slab.h"

namespace tqlab {
namespace {

// Sums of (x - y)^2 and x^2 in kLanes interleaved partial sums, added up at
// the end: a fixed order (the same bits on every run), no chain of dependent
// adds. Written with GCC vector types so that it runs in SIMD registers on any
// x86-64 build. Value i of the slab goes to lane i % kLanes, and the values
// past the last whole group of kLanes to lane 0: so adding a slab in pieces
// whose sizes (all but the last) are multiples of kLanes gives the same bits
// as adding it at once.
class ErrorSums {
 public:
  static constexpr std::size_t kLanes = 8;

  void add(std::size_t n, const float* x, const float* y) {
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (std::size_t half = 0; half < 2; ++half) {
        Floats4 x4, y4;
        std::memcpy(&x4, x + i + 4 * half, sizeof(x4));
        std::memcpy(&y4, y + i + 4 * half, sizeof(y4));
        const Doubles4 value = __builtin_convertvector(x4, Doubles4);
        const Doubles4 difference = value - __builtin_convertvector(y4, Doubles4);
        error_[half] += difference * difference;
        energy_[half] += value * value;
      }
    }
    for (; i < n; ++i) {
      const double value = x[i];
      const double difference = value - static_cast<double>(y[i]);
      error_[0][0] += difference * difference;
      energy_[0][0] += value * value;
    }
  }

  void add_to(SlabOutcome& outcome) const {
    for (std::size_t lane = 0; lane < kLanes; ++lane) {
      outcome.squared_error += error_[lane / 4][lane % 4];
      outcome.energy += energy_[lane / 4][lane % 4];
    }
  }

 private:
  using Floats4 = float __attribute__((vector_size(16)));
  using Doubles4 = double __attribute__((vector_size(32)));
  Doubles4 error_[2] = {}, energy_[2] = {};  // lanes 0-3 and 4-7
};

static_assert(ErrorSums::kLanes == 8, "slab_piece_tokens rounds pieces to multiples of the lane count");

// The whole slab's values: little-endian f32 slabs that are one aligned run
// of the input are used where they lie (in the mapping); every other slab is
// read (converted) into `input`.
const float* slab_values(const RoundtripPlan& plan, const QuantizedTensor& tensor, const KvSlab& where, int dim,
                         std::vector<float>& input) {
  const TensorView& view = *tensor.view;
  const std::int64_t tokens = slab_tokens(*plan.dump, where);
  if (view.dtype == DType::f32 && !view.big_endian && tokens > 0 && slab_is_contiguous(plan.axes, view.strides, dim)) {
    const std::byte* at = view.data + slab_base(plan.axes, view.strides, where.seq, where.head) * 4;
    if (reinterpret_cast<std::uintptr_t>(at) % alignof(float) == 0) return reinterpret_cast<const float*>(at);
  }
  read_slab(*plan.dump, where, input);
  return input.data();
}

// True when each piece of the slab can be read from the file on its own: the
// slab is one little-endian run of f32, f16 or bf16.
bool reads_by_piece(const RoundtripPlan& plan, const TensorView& view, int dim) {
  return !view.big_endian && slab_is_contiguous(plan.axes, view.strides, dim) &&
         (view.dtype == DType::f32 || view.dtype == DType::f16 || view.dtype == DType::bf16);
}

// Reads rows [first, first + rows) of a slab for which reads_by_piece holds
// into buffers.input (converted to float, as read_slab converts them).
const float* read_piece(const RoundtripPlan& plan, const TensorView& view, const KvSlab& where, int dim,
                        std::int64_t first, std::int64_t rows, SlabBuffers& buffers) {
  const std::size_t count = static_cast<std::size_t>(rows) * static_cast<std::size_t>(dim);
  const std::size_t element_size = dtype_size(view.dtype);
  const auto element =
      static_cast<std::uint64_t>(slab_base(plan.axes, view.strides, where.seq, where.head) + first * dim);
  buffers.input.resize(count);
  if (view.dtype == DType::f32) {
    plan.file->read_bytes(view, element * 4, std::as_writable_bytes(std::span(buffers.input.data(), count)));
  } else {
    buffers.raw.resize(count * element_size);
    plan.file->read_bytes(view, element * element_size, buffers.raw);
    load_elements(count, buffers.raw.data(), view.dtype, 1, buffers.input.data());
  }
  return buffers.input.data();
}

// roundtrip_slab in pieces of `piece_tokens` (all of them: one piece), each
// read by pread (read_piece) when `by_pread`, else taken from the whole slab.
SlabOutcome fake_quantize_pieces(const RoundtripPlan& plan, const QuantizedTensor& tensor, const KvSlab& where,
                                 std::uint64_t seed, std::int64_t piece_tokens, bool by_pread, SlabBuffers& buffers,
                                 const SlabRowsSink& sink) {
  const KvDump& dump = *plan.dump;
  const TensorView& view = *tensor.view;
  const int dim = slab_dim(dump, where);
  const std::int64_t tokens = slab_tokens(dump, where);
  const std::size_t element_size = dtype_size(view.dtype);
  const float* x = by_pread ? nullptr : slab_values(plan, tensor, where, dim, buffers.input);

  SlabOutcome outcome;
  ErrorSums sums;
  std::int64_t first = 0;
  do {  // at least once: a quantizer may store something even for no tokens
    const std::int64_t rows = std::min(piece_tokens, tokens - first);
    const std::size_t size = static_cast<std::size_t>(rows) * static_cast<std::size_t>(dim);
    const float* piece_x = by_pread ? read_piece(plan, view, where, dim, first, rows, buffers)
                                    : x + static_cast<std::size_t>(first) * static_cast<std::size_t>(dim);
    buffers.decoded.resize(size);
    float* decoded = buffers.decoded.data();
    // A piece's quantizer counts tokens from the piece's first (roundtrip_slab rewrites such errors).
    outcome.encoded_bytes += fake_quantize_rows(dump, where, *tensor.quantizer, seed, rows, piece_x, decoded);
    std::span<const std::byte> stored;
    if (view.dtype == DType::f32) {
      // The decoded floats are what the file holds: no conversion, no copy.
      stored = std::as_bytes(std::span<const float>(decoded, size));
      sums.add(size, piece_x, decoded);
    } else {
      // The error is measured on what the file will hold, after rounding to its dtype.
      // store_elements and load_elements give store_element's bits and return value, many values at a time.
      buffers.stored.resize(size * element_size);
      buffers.rounded.resize(size);
      (void)store_elements(size, decoded, view.dtype, 1, buffers.stored.data());
      load_elements(size, buffers.stored.data(), view.dtype, 1, buffers.rounded.data());
      stored = std::span<const std::byte>(buffers.stored.data(), size * element_size);
      sums.add(size, piece_x, buffers.rounded.data());
    }
    // x is finite (quantizers refuse anything else), so a stored Inf or NaN shows in the sums.
    SlabOutcome so_far;
    sums.add_to(so_far);
    if (!std::isfinite(so_far.squared_error)) {
      std::byte scratch[8];
      for (std::size_t i = 0; i < size; ++i) {
        if (std::isfinite(store_element(decoded[i], view.dtype, scratch))) continue;
        fail("'{}': tensor '{}', sequence {}, head {}: '{}' decodes token {}, channel {} to {}, which {} cannot hold",
             dump.file().path(), printable(view.name), where.seq, where.head, tensor.quantizer->spec_for_dim(dim),
             static_cast<std::size_t>(first) + i / static_cast<std::size_t>(dim), i % static_cast<std::size_t>(dim),
             decoded[i], dtype_name(view.dtype));
      }
    }
    sink(first, stored);
    first += rows;
  } while (first < tokens);
  sums.add_to(outcome);
  return outcome;
}

}  // namespace

std::int64_t slab_piece_tokens(int dim) {
  return std::max<std::int64_t>(8, kSlabPieceValues / std::max(dim, 1) / 8 * 8);
}

SlabOutcome roundtrip_slab(const RoundtripPlan& plan, const QuantizedTensor& tensor, int seq, int head,
                           std::uint64_t seed, SlabPieces pieces, SlabBuffers& buffers, const SlabRowsSink& sink) {
  const KvSlab where{tensor.role, tensor.layer_index, seq, head};
  const int dim = slab_dim(*plan.dump, where);
  const std::int64_t tokens = slab_tokens(*plan.dump, where);
  if (pieces == SlabPieces::whole) return fake_quantize_pieces(plan, tensor, where, seed, tokens, false, buffers, sink);
  // Streamed, each piece is read from the file as it is needed (nothing of the map is touched).
  const bool by_pread = tokens > 0 && reads_by_piece(plan, *tensor.view, dim);
  const std::int64_t piece_tokens =
      tensor.quantizer->encodes_tokens_independently() ? std::min(tokens, slab_piece_tokens(dim)) : tokens;
  if (piece_tokens == tokens) return fake_quantize_pieces(plan, tensor, where, seed, tokens, by_pread, buffers, sink);
  try {
    return fake_quantize_pieces(plan, tensor, where, seed, piece_tokens, by_pread, buffers, sink);
  } catch (const InputError&) {
    // In pieces the checks run piece by piece and a quantizer counts tokens
    // from the piece's first: the whole slab at once raises the error the
    // reference raises (the same token, the same order of checks).
    SlabBuffers whole_buffers;
    (void)fake_quantize_pieces(plan, tensor, where, seed, tokens, false, whole_buffers,
                               [](std::int64_t, std::span<const std::byte>) {});
    throw;  // not reached for a quantizer whose tokens are independent
  }
}

}  // namespace tqlab
