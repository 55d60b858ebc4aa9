// The packed byte layout of one `tq` tensor (quant/tq_quantizer.h): which
// groups of channels it is cut into, and where each section of the bytes lies.
//
// Packed layout of one (role, layer, head) tensor of T tokens, each section
// starting on a byte boundary, in this order:
//   [center=channel] D channel means, fp16
//   [outliers]       K outlier channel indices, uint16, ascending
//   for each group (regular channels first, then outliers), with n = T * blocks
//   and (token, block) in row-major order:
//     codes            n * B codes of mse_bits bits, one bit stream
//     [qjl]            n * m sign bits, one bit stream
//     norms            n values of the norm type
//     [qjl]            n residual norms of the norm type
//     [center=block]   n block means, fp16
// At D = 128, b = 3, fp16 norms that is 48 + 2 bytes per token: 3.125 bits per value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/rotation.h"
#include "quant/tq_options.h"

namespace tqlab::tq {

// One group of channels quantized alike: all channels, or the regular /
// outlier channels of outliers=K@B2.
struct GroupPlan {
  int index = 0;               // 0: regular channels, 1: outlier channels (enters the seeds)
  std::vector<int> channels;   // the group's channels in the head vector (size G)
  int block = 0;               // B
  int blocks = 0;              // G / B
  int mse_bits = 0;            // bits of a scalar code (0: pure QJL)
  RotationKind rotation = RotationKind::hadamard;
  int projections = 0;         // QJL m (0: no QJL)

  int size() const { return static_cast<int>(channels.size()); }
};

// Byte offsets of one group's sections.
struct GroupSections {
  std::size_t codes = 0, signs = 0, norms = 0, residual_norms = 0, means = 0, end = 0;
};

struct TensorPlan {
  std::int64_t tokens = 0;
  int dim = 0;
  std::vector<GroupPlan> groups;
  std::size_t channel_means = 0, outlier_indices = 0;  // section offsets
  std::vector<GroupSections> sections;
  std::size_t total_bytes = 0;
};

/// The rotation of a block of `block` channels: the spec's, else Hadamard when
/// the block is a power of two and Haar otherwise.
RotationKind rotation_for(const TqOptions& options, int block);

/// Groups and section offsets of a tensor of `tokens` x `dim` values;
/// `outliers` lists the outlier channels (ascending; empty without outliers=).
TensorPlan plan_tensor(const TqOptions& options, std::int64_t tokens, int dim, const std::vector<int>& outliers);

}  // namespace tqlab::tq
