#include "quant/tq_group_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "core/bit_pack.h"
#include "core/dtype.h"
#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/rng.h"
#include "quant/codec_cache.h"
#include "quant/qjl.h"
#include "quant/quantizer_support.h"
#include "quant/tq_kernels.h"

namespace tqlab::tq {
namespace {

// Streams of derive_seed: each random object of a block has its own.
enum SeedStream : std::uint64_t { kRotationStream = 1, kQjlStream = 2 };

// Tokens processed together (T). Without QJL, T x G input floats and as many
// rotated directions (32 KiB at T = 32, G = 128) stay in L1 (48 KiB on the
// machine of docs/PERFORMANCE.md) from the norms through the rotation to the
// bucketizing; T = 256 (256 KiB, in L2) made the tq:b=4 round trip 10% and
// decode 16% slower. With QJL, 256: the sketch reads its m x B matrix once
// per chunk. No row's bytes depend on T (every step works row by row).
constexpr std::int64_t kMaxChunkTokens = 256;
constexpr std::int64_t kL1ChunkFloats = 4096;  // T x G of one of the two buffers

// T for a group of G = group_size channels: a power of two from 8 to 256 (so
// that each chunk's codes start on a byte boundary, where the SIMD packers run).
std::int64_t chunk_tokens_for(int group_size, int projections) {
  if (projections > 0) return kMaxChunkTokens;
  const auto fitting =
      std::bit_floor(static_cast<std::uint64_t>(std::max<std::int64_t>(kL1ChunkFloats / group_size, 1)));
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(fitting), 8, kMaxChunkTokens);
}

// The random objects (from the codec cache, shared), codebook and scratch rows
// of one group, for one (role, layer, head). One per encode / decode call; its
// scratch rows are not shared between threads.
class GroupCodec {
 public:
  GroupCodec(const TqOptions& options, const GroupPlan& group, const QuantContext& context)
      : options_(options), group_(group), context_(context),
        chunk_tokens_(chunk_tokens_for(group.size(), group.projections)) {
    for (int block = 0; block < group.blocks; ++block) {
      const auto seed_of = [&](SeedStream stream) {
        return derive_seed({context.seed, static_cast<std::uint64_t>(context.role),
                            static_cast<std::uint64_t>(context.layer), static_cast<std::uint64_t>(context.kv_head),
                            static_cast<std::uint64_t>(group.index), static_cast<std::uint64_t>(block), stream});
      };
      rotations_.push_back(cached_rotation(group.rotation, group.block, seed_of(kRotationStream)));
      if (group.projections > 0) {
        sketches_.push_back(cached_qjl_sketch(group.block, group.projections, seed_of(kQjlStream)));
      }
    }
    if (group.mse_bits > 0) {
      codebook_ = &lloyd_max_codebook(group.block, group.mse_bits, options.codebook);
      alpha_ = codebook_->alpha;
    }
    const auto block = static_cast<std::size_t>(group.block);
    const auto tokens = static_cast<std::size_t>(chunk_tokens_);
    rows_.resize(tokens * block);
    if (group.blocks > 1) chunk_.resize(tokens * static_cast<std::size_t>(group.size()));
    row_scales_.resize(tokens);
    codes_.resize(block);
    signs_.resize(tokens * static_cast<std::size_t>(std::max(group.projections, 1)));
    if (group.projections > 0) residual_.resize(tokens * block);
  }

  // Rows per encode_chunk / decode_chunk call.
  std::int64_t chunk_tokens() const { return chunk_tokens_; }

  // Quantizes rows [first, first + n) (n <= chunk_tokens()) of input.source:
  // every block's norms and rotation, then (without QJL) the codes of all of
  // them in one run, since the stream orders codes by (token, block).
  void encode_chunk(std::int64_t first, std::int64_t n, const EncodeInput& input, const GroupSections& sections,
                    std::uint8_t* bytes, const QuantContext& context) {
    const int B = group_.block;
    const int width = group_.size();
    for (int block = 0; block < group_.blocks; ++block) {
      encode_block_rows(first, n, block, input, sections, bytes, context);
      if (group_.projections > 0) {
        encode_residuals(first, n, block, sections, bytes);
      } else if (group_.blocks > 1) {
        for (std::int64_t row = 0; row < n; ++row) {
          std::copy_n(rows_.data() + row * B, B, chunk_.data() + row * width + block * B);
        }
      }
    }
    if (group_.projections == 0) {
      const float* directions = group_.blocks == 1 ? rows_.data() : chunk_.data();
      quantize_and_pack(static_cast<std::size_t>(n * width), directions, *codebook_, bytes + sections.codes,
                        code_bit(first, 0));
    }
  }

  // Decodes rows [first, first + n) (n <= chunk_tokens()) into the group's channels of out: tokens x dim floats.
  void decode_chunk(std::int64_t first, std::int64_t n, const GroupSections& sections, const std::uint8_t* bytes,
                    int dim, float* out) {
    const int B = group_.block;
    const int width = group_.size();
    float* centroids = group_.blocks == 1 ? rows_.data() : chunk_.data();
    if (group_.mse_bits > 0) {
      unpack_and_dequantize(static_cast<std::size_t>(n * width), bytes + sections.codes, code_bit(first, 0),
                            *codebook_, centroids);
    } else {
      std::fill(centroids, centroids + n * width, 0.0f);
    }
    for (int block = 0; block < group_.blocks; ++block) {
      if (group_.blocks > 1) {
        for (std::int64_t row = 0; row < n; ++row) {
          std::copy_n(chunk_.data() + row * width + block * B, B, rows_.data() + row * B);
        }
      }
      decode_block_rows(first, n, block, sections, bytes, dim, out);
    }
  }

 private:
  // Norms of block `block` of rows [first, first + n) of input.source, stored;
  // their directions rotated into rows_ (n x B).
  void encode_block_rows(std::int64_t first, std::int64_t n, int block, const EncodeInput& input,
                         const GroupSections& sections, std::uint8_t* bytes, const QuantContext& context) {
    const int B = group_.block;
    const int dim = input.dim;
    const float* x = input.source;
    const int* channels = block_channels(block);
    float* rows = rows_.data();
    // The norms are read where the block lies in x when its channels are
    // contiguous (no copy); outlier groups and center=block work on a gathered copy.
    const float* block_rows = x + first * dim + channels[0];
    std::int64_t stride = dim;
    if (!is_contiguous(channels) || options_.center == CenterMode::block) {
      gather_rows(first, n, channels, x, dim, rows);
      if (options_.center == CenterMode::block) subtract_block_means(first, n, block, input, sections, bytes, context);
      block_rows = rows;
      stride = B;
    }
    float* norms = row_scales_.data();
    row_norms(n, B, stride, block_rows, norms);
    const auto row = static_cast<std::int64_t>(store_norms(n, norms, first, block, sections.norms, bytes));
    if (row < n) {
      // A NaN or Inf in x shows here first (encode defers its scan to this
      // point): name it as the upfront scan would have, else the overflow.
      require_finite(input.tokens, input.dim, input.x, context);
      fail("the {} tensor of layer {}, kv head {}: token {} has norm {:.6g}, beyond {}{}", role_name(context.role),
           context.layer, context.kv_head, first + row, norms[row], norm_type_name(options_.norm),
           options_.norm == NormType::fp32 ? "" : "; use norm=fp32");
    }
    // norms[row] becomes 1 / ||x|| (0 for a zero block).
    bool reciprocals_finite = true;
    for (std::int64_t r = 0; r < n; ++r) {
      norms[r] = norms[r] > 0 ? 1.0f / norms[r] : 0.0f;
      reciprocals_finite = reciprocals_finite && std::isfinite(norms[r]);
    }
    const Rotation& rotation = *rotations_[static_cast<std::size_t>(block)];
    if (reciprocals_finite) {
      // u = x * (1 / ||x||), rotated: one fused pass for the Hadamard rotation.
      rotation.forward_scaled(n, block_rows, stride, norms, rows);
      return;
    }
    // A subnormal norm (below 2^-128) has no float reciprocal: x * Inf would be
    // Inf or NaN. |x_i| <= ||x||, so x_i / ||x|| is finite; such rows divide.
    for (std::int64_t row = 0; row < n; ++row) {
      const float* in = block_rows + row * stride;
      float* u = rows + row * B;
      if (std::isfinite(norms[row])) {
        for (int i = 0; i < B; ++i) u[i] = in[i] * norms[row];
      } else {
        const float norm = vector_norm(B, in);
        for (int i = 0; i < B; ++i) u[i] = in[i] / norm;
      }
    }
    rotation.forward(n, rows, rows);
  }

  // Finishes block `block` of rows [first, first + n), whose centroids are in
  // rows_ (n x B): QJL estimate, nc / debias, inverse rotation, norm (+ mean),
  // written to the block's channels of out.
  void decode_block_rows(std::int64_t first, std::int64_t n, int block, const GroupSections& sections,
                         const std::uint8_t* bytes, int dim, float* out) {
    const int B = group_.block;
    float* rows = rows_.data();
    if (group_.projections > 0) {
      const auto m = static_cast<std::size_t>(group_.projections);
      float* residual_norms = row_scales_.data();
      load_norms(n, first, block, sections.residual_norms, bytes, residual_norms);
      for (std::int64_t row = 0; row < n; ++row) {
        const std::uint64_t at = slot(first + row, block);
        unpack_codes(m, bytes + sections.signs, at * m, 1, signs_.data() + static_cast<std::size_t>(row) * m);
        require_stored_norm(residual_norms[row], "residual norm", first + row, block);
      }
      // All rows at once: the sketch reads its matrix once for several.
      sketches_[static_cast<std::size_t>(block)]->add_estimate(n, signs_.data(), residual_norms, rows, B);
    }
    if (options_.norm_correction || options_.debias) {
      float* scales = row_scales_.data();
      if (options_.norm_correction) {
        row_norms(n, B, B, rows, scales);
        for (std::int64_t row = 0; row < n; ++row) {
          // A direction too short for a float reciprocal is zero to within rounding.
          const float inverse = scales[row] > 0 ? 1.0f / scales[row] : 0.0f;
          scales[row] = std::isfinite(inverse) ? inverse : 0.0f;
        }
      } else {
        std::fill(scales, scales + n, static_cast<float>(1.0 / alpha_));
      }
      for (std::int64_t row = 0; row < n; ++row) {
        if (scales[row] == 1.0f) continue;
        for (int i = 0; i < B; ++i) rows[row * B + i] *= scales[row];
      }
    }
    float* norms = row_scales_.data();
    load_norms(n, first, block, sections.norms, bytes, norms);
    for (std::int64_t row = 0; row < n; ++row) require_stored_norm(norms[row], "norm", first + row, block);
    // Rotated back and times the norm in one pass, straight into out when
    // the block's channels are contiguous.
    const int* channels = block_channels(block);
    const bool contiguous = is_contiguous(channels);
    float* decoded = contiguous ? out + first * dim + channels[0] : rows;
    const std::int64_t stride = contiguous ? dim : B;
    if (!rotations_[static_cast<std::size_t>(block)]->inverse_scaled(n, rows, norms, decoded, stride)) {
      // Stored norms are finite, but a norm near the type's largest value
      // times a direction longer than 1 (debias, QJL) can still overflow.
      for (std::int64_t row = 0; row < n; ++row) {
        if (first_non_finite(B, decoded + row * stride) >= 0) {
          fail_corrupt(options_.spec(), context_,
                       fmt::format("token {}, block {} (stored norm {}) decodes beyond float range", first + row,
                                   block, norms[row]));
        }
      }
    }
    for (std::int64_t row = 0; row < n; ++row) {
      const std::size_t at = slot(first + row, block);
      float* target = out + (first + row) * dim;
      if (!contiguous) {
        const float* direction = rows + row * B;
        for (int i = 0; i < B; ++i) target[channels[i]] = direction[i];
      }
      if (options_.center == CenterMode::block) {
        // A second pass, not direction * norm + mean in one expression: that
        // could be contracted into an FMA and round differently.
        std::uint16_t mean_bits;
        std::memcpy(&mean_bits, bytes + sections.means + 2 * at, 2);
        const float mean = half_to_float(mean_bits);
        if (!std::isfinite(mean)) {
          fail_corrupt(options_.spec(), context_,
                       fmt::format("token {}, block {} stores block mean {}", first + row, block, mean));
        }
        for (int i = 0; i < B; ++i) target[channels[i]] += mean;
      }
    }
  }

  // Encode never stores a negative or non-finite norm; such bytes would
  // decode to NaN or Inf.
  void require_stored_norm(float value, const char* what, std::int64_t token, int block) const {
    if (value >= 0.0f && std::isfinite(value)) return;
    fail_corrupt(options_.spec(), context_, fmt::format("token {}, block {} stores {} {}", token, block, what, value));
  }

  // Stores norms[0 .. n), the values of block `block` of rows [first, first +
  // n), in the norm section at byte `section` (one element per (token,
  // block) slot). Returns the first row whose stored norm is not finite, or n.
  std::size_t store_norms(std::int64_t n, const float* norms, std::int64_t first, int block, std::size_t section,
                          std::uint8_t* bytes) const {
    const DType type = norm_dtype(options_.norm);
    return store_elements(static_cast<std::size_t>(n), norms, type, static_cast<std::size_t>(group_.blocks),
                          bytes + section + dtype_size(type) * slot(first, block));
  }

  // norms[0 .. n) = the stored values of block `block` of rows [first, first + n) in the section at byte `section`.
  void load_norms(std::int64_t n, std::int64_t first, int block, std::size_t section, const std::uint8_t* bytes,
                  float* norms) const {
    const DType type = norm_dtype(options_.norm);
    load_elements(static_cast<std::size_t>(n), bytes + section + dtype_size(type) * slot(first, block), type,
                  static_cast<std::size_t>(group_.blocks), norms);
  }

  // Index of (token, block) in the group's per-block sections.
  std::size_t slot(std::int64_t token, int block) const {
    return static_cast<std::size_t>(token * group_.blocks + block);
  }
  // Stream bit of the first code of (token, block).
  std::uint64_t code_bit(std::int64_t token, int block) const {
    return static_cast<std::uint64_t>(slot(token, block)) * static_cast<std::uint64_t>(group_.block) *
           static_cast<std::uint64_t>(group_.mse_bits);
  }
  const int* block_channels(int block) const {
    return group_.channels.data() + static_cast<std::ptrdiff_t>(block) * group_.block;
  }
  bool is_contiguous(const int* channels) const { return channels[group_.block - 1] - channels[0] == group_.block - 1; }

  // rows (n x B) = the block's channels of rows [first, first + n) of x.
  void gather_rows(std::int64_t first, std::int64_t n, const int* channels, const float* x, int dim,
                   float* rows) const {
    const int B = group_.block;
    for (std::int64_t row = 0; row < n; ++row) {
      const float* source = x + (first + row) * dim;
      for (int i = 0; i < B; ++i) rows[row * B + i] = source[channels[i]];
    }
  }

  // center=block: subtracts each gathered row's mean, rounded to fp16 as stored.
  void subtract_block_means(std::int64_t first, std::int64_t n, int block, const EncodeInput& input,
                            const GroupSections& sections, std::uint8_t* bytes, const QuantContext& context) {
    const int B = group_.block;
    for (std::int64_t row = 0; row < n; ++row) {
      float* x = rows_.data() + row * B;
      double sum = 0;
      for (int i = 0; i < B; ++i) sum += x[i];
      const std::uint16_t mean_bits = float_to_half(static_cast<float>(sum / B));
      const float mean = half_to_float(mean_bits);
      if (!std::isfinite(mean)) {
        require_finite(input.tokens, input.dim, input.x, context);  // a NaN/Inf in x is named as such
        fail("center=block: token {}, block {} has mean {:.6g}, beyond fp16 (65504), where the block means are "
             "stored; drop center=block or rescale the data",
             first + row, block, sum / B);
      }
      for (int i = 0; i < B; ++i) x[i] -= mean;
      std::memcpy(bytes + sections.means + 2 * slot(first + row, block), &mean_bits, 2);
    }
  }

  // Codes, QJL signs and residual norms of block `block` of rows [first,
  // first + n), whose rotated directions are in rows_ (n x B).
  void encode_residuals(std::int64_t first, std::int64_t n, int block, const GroupSections& sections,
                        std::uint8_t* bytes) {
    const int B = group_.block;
    const auto m = static_cast<std::size_t>(group_.projections);
    float* residuals = residual_.data();
    if (group_.mse_bits > 0 && group_.blocks == 1) {
      // One block per token: the rows' codes are one contiguous run of the
      // stream. The kernels give the codes quantize_to_codes gives and the
      // centroids they stand for, so the residuals below are the per-row
      // loop's, bit for bit.
      const auto count = static_cast<std::size_t>(n * B);
      quantize_and_pack(count, rows_.data(), *codebook_, bytes + sections.codes, code_bit(first, 0));
      unpack_and_dequantize(count, bytes + sections.codes, code_bit(first, 0), *codebook_, residuals);
      for (std::size_t i = 0; i < count; ++i) residuals[i] = rows_[i] - residuals[i];
    } else {
      for (std::int64_t row = 0; row < n; ++row) {
        const float* y = rows_.data() + row * B;
        float* residual = residuals + row * B;
        if (group_.mse_bits > 0) {
          quantize_to_codes(B, y, *codebook_, codes_.data());
          pack_codes(static_cast<std::size_t>(B), codes_.data(), group_.mse_bits, bytes + sections.codes,
                     code_bit(first + row, block));
          for (int i = 0; i < B; ++i) residual[i] = y[i] - codebook_->centroids_f[codes_[static_cast<std::size_t>(i)]];
        } else {
          for (int i = 0; i < B; ++i) residual[i] = y[i] - 0.0f;
        }
      }
    }
    float* residual_norms = row_scales_.data();
    row_norms(n, B, B, residuals, residual_norms);  // vector_norm's bits, in SIMD
    store_norms(n, residual_norms, first, block, sections.residual_norms, bytes);
    // All rows at once: the sketch reads its matrix once for several.
    sketches_[static_cast<std::size_t>(block)]->sketch(n, residuals, residual_norms, signs_.data());
    for (std::int64_t row = 0; row < n; ++row) {
      pack_codes(m, signs_.data() + static_cast<std::size_t>(row) * m, 1, bytes + sections.signs,
                 slot(first + row, block) * static_cast<std::uint64_t>(m));
    }
  }

  const TqOptions& options_;
  const GroupPlan& group_;
  const QuantContext& context_;
  const std::int64_t chunk_tokens_;  // T: rows per chunk (chunk_tokens_for)
  std::vector<std::shared_ptr<const Rotation>> rotations_;
  std::vector<std::shared_ptr<const QjlSketch>> sketches_;
  const Codebook* codebook_ = nullptr;
  double alpha_ = 1.0;
  std::vector<float> rows_;        // T x B: one block's directions being rotated
  std::vector<float> chunk_;       // T x G (blocks > 1): every block's rotated directions, by row
  std::vector<float> row_scales_;  // T: norms, or decode's per-row scales
  std::vector<std::uint8_t> codes_, signs_;  // B codes; T x m QJL signs
  std::vector<float> residual_;    // T x B (QJL): y minus its centroids
};

}  // namespace

void encode_group(const TqOptions& options, const GroupPlan& group, const GroupSections& sections,
                  const EncodeInput& input, const QuantContext& context, std::uint8_t* bytes) {
  GroupCodec codec(options, group, context);
  for (std::int64_t first = 0; first < input.tokens; first += codec.chunk_tokens()) {
    const std::int64_t n = std::min(codec.chunk_tokens(), input.tokens - first);
    codec.encode_chunk(first, n, input, sections, bytes, context);
  }
}

void decode_group(const TqOptions& options, const GroupPlan& group, const GroupSections& sections,
                  const std::uint8_t* bytes, std::int64_t tokens, int dim, const QuantContext& context, float* out) {
  GroupCodec codec(options, group, context);
  for (std::int64_t first = 0; first < tokens; first += codec.chunk_tokens()) {
    const std::int64_t n = std::min(codec.chunk_tokens(), tokens - first);
    codec.decode_chunk(first, n, sections, bytes, dim, out);
  }
}

}  // namespace tqlab::tq
