// Summary statistics of stored tensors, streamed (one vector at a time), so a
// tensor is never held whole as floats.
//
// Integer and bool tensors (token ids, masks, position ids) are summarized
// from their exact values, not through float: min and max are exact (a double
// holds integers exactly only up to 2^53, an i64 token hash or a u64 id may
// not fit); the mean is the exact (128-bit) integer sum divided by the count,
// rounded to double; the rms is accumulated in double. Bools count as 0 and 1.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab {

/// Exact extremes of a non-empty integer or bool tensor.
struct IntegerRange {
  bool is_unsigned = false;  ///< bool and u8..u64: the unsigned fields hold min and max
  std::int64_t signed_min = 0, signed_max = 0;
  std::uint64_t unsigned_min = 0, unsigned_max = 0;

  /// min / max in decimal, exactly: "-9223372036854775808", "18446744073709551615".
  std::string min_text() const;
  std::string max_text() const;
};

/// Statistics over a tensor's finite values; non-finite values are only counted.
struct TensorStats {
  std::int64_t count = 0;      ///< all elements
  std::int64_t nonfinite = 0;  ///< NaN and +-Inf (0 for integer and bool tensors)
  double min = 0, max = 0, mean = 0, rms = 0;  ///< over finite values (0 when none); integers rounded to double
  std::optional<IntegerRange> integer;         ///< integer and bool tensors with elements: exact min and max
};

/// Statistics of any tensor but raw16 (InputError: its values need OpenOptions::raw16_as_bf16).
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
/// with the layer number the last number in NAME. Both must be float tensors.
/// Sorted by layer.
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
