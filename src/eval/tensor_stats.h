// Summary statistics of stored tensors, streamed (one vector at a time), so a
// tensor is never held whole as floats.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab {

/// Statistics over a tensor's finite values; non-finite values are only counted.
struct TensorStats {
  std::int64_t count = 0;      ///< all elements
  std::int64_t nonfinite = 0;  ///< NaN and +-Inf
  double min = 0, max = 0, mean = 0, rms = 0;  ///< over finite values (0 when none)
};

TensorStats compute_tensor_stats(const TensorView& tensor);

/// Calls visit(vector) for every vector of `tensor` along `channel_axis`
/// (every index of the other axes, in C order); vector: shape[channel_axis] floats.
void for_each_vector(const TensorView& tensor, int channel_axis, const std::function<void(const float*)>& visit);

/// A key tensor and its value (and query) tensor of one layer.
struct KvTensorNames {
  int layer = 0;
  std::string keys, values, queries;  ///< queries empty when absent
};

/// Recognizes K/V pairs by name: NAME<sep>k / NAME<sep>v (also key/value,
/// keys/values, k_proj/v_proj, key_states/value_states, k_cache/v_cache),
/// with the layer number the last number in NAME. Sorted by layer.
std::vector<KvTensorNames> find_kv_tensor_names(const TensorFile& file);

/// Per-layer K/V statistics (vectors along `channel_axis`).
struct KvLayerStats {
  KvTensorNames names;
  double key_norm_mean = 0;    ///< mean L2 norm of the key vectors
  double value_norm_mean = 0;  ///< mean L2 norm of the value vectors
  double norm_ratio = 0;       ///< key_norm_mean / value_norm_mean; 0 when there are no value vectors
  double median_key_channel_rms = 0;  ///< 0 when there are no key vectors
  /// The channels with the largest key RMS (channel, rms), largest first;
  /// empty when there is no finite key vector (zero tokens, or all NaN/Inf).
  std::vector<std::pair<int, double>> outlier_channels;
};

/// Measures one layer, listing the `outliers` channels of largest key RMS.
/// channel_axis -1 means the last axis. Vectors holding NaN/Inf are skipped
/// (compute_tensor_stats counts them).
KvLayerStats measure_kv_layer(const TensorFile& file, const KvTensorNames& names, int channel_axis, int outliers);

}  // namespace tqlab
