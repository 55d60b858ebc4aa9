#include "quant/tq_layout.h"

#include <algorithm>

#include "core/bit_pack.h"
#include "core/dtype.h"
#include "quant/quantizer_support.h"

namespace tqlab::tq {

RotationKind rotation_for(const TqOptions& options, int block) {
  if (options.rotation) return *options.rotation;
  return hadamard_supports(block) ? RotationKind::hadamard : RotationKind::haar;
}

TensorPlan plan_tensor(const TqOptions& options, std::int64_t tokens, int dim, const std::vector<int>& outliers) {
  TensorPlan plan;
  plan.tokens = tokens;
  plan.dim = dim;
  std::vector<int> regular;
  for (int c = 0, next = 0; c < dim; ++c) {
    if (next < static_cast<int>(outliers.size()) && outliers[static_cast<std::size_t>(next)] == c) {
      ++next;
    } else {
      regular.push_back(c);
    }
  }
  auto add_group = [&](int index, std::vector<int> channels, int bits) {
    GroupPlan group;
    group.index = index;
    group.channels = std::move(channels);
    group.block = options.block != 0 ? options.block : group.size();
    group.blocks = group.size() / group.block;
    group.mse_bits = options.qjl == QjlMode::prod ? bits - 1 : bits;
    group.rotation = rotation_for(options, group.block);
    if (options.qjl != QjlMode::none)
      group.projections = options.qjl_projections != 0 ? options.qjl_projections : group.block;
    plan.groups.push_back(std::move(group));
  };
  add_group(0, std::move(regular), options.bits);
  if (!outliers.empty()) add_group(1, outliers, options.outlier_bits);

  std::size_t offset = 0;
  if (options.center == CenterMode::channel) {
    plan.channel_means = offset;
    offset += 2 * static_cast<std::size_t>(dim);
  }
  if (options.outlier_channels > 0) {
    plan.outlier_indices = offset;
    offset += 2 * outliers.size();
  }
  const std::size_t norm_bytes = dtype_size(norm_dtype(options.norm));
  for (const GroupPlan& group : plan.groups) {
    const std::size_t n = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(group.blocks);
    GroupSections sections;
    sections.codes = offset;
    offset +=
        packed_bytes(n * static_cast<std::size_t>(group.block), std::max(group.mse_bits, 1)) * (group.mse_bits > 0);
    sections.signs = offset;
    offset += packed_bytes(n * static_cast<std::size_t>(group.projections), 1);
    sections.norms = offset;
    offset += n * norm_bytes;
    sections.residual_norms = offset;
    if (group.projections > 0) offset += n * norm_bytes;
    sections.means = offset;
    if (options.center == CenterMode::block) offset += 2 * n;
    sections.end = offset;
    plan.sections.push_back(sections);
  }
  plan.total_bytes = offset;
  return plan;
}


}  // namespace tqlab::tq
