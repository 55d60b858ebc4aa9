#include "io/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "core/text.h"

namespace tqlab {

void for_each_vector(const TensorView& tensor, int channel_axis, const std::function<void(const float*)>& visit) {
  if (tensor.element_count() == 0) return;
  const std::size_t rank = tensor.shape.size();
  const auto axis = static_cast<std::size_t>(channel_axis);
  const std::int64_t channels = rank == 0 ? 1 : tensor.shape[axis];
  const std::int64_t channel_stride = rank == 0 ? 1 : tensor.strides[axis];
  std::vector<float> vector(static_cast<std::size_t>(channels));
  // Odometer over the other axes.
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t offset = 0;
  const std::int64_t vectors = tensor.element_count() / channels;
  for (std::int64_t done = 0; done < vectors; ++done) {
    read_floats(tensor, offset, channel_stride, channels, vector.data());
    visit(vector.data());
    for (std::size_t a = rank; a-- > 0;) {
      if (a == axis) continue;
      if (++index[a] < tensor.shape[a]) {
        offset += tensor.strides[a];
        break;
      }
      offset -= tensor.strides[a] * (tensor.shape[a] - 1);
      index[a] = 0;
    }
  }
}

namespace {

// GCC and Clang's 128-bit integers hold any sum of 2^63 64-bit values exactly.
__extension__ using Int128 = __int128;
__extension__ using UInt128 = unsigned __int128;

// sum / count rounded to double: the quotient and the remainder's share, each
// converted once, so a sum beyond 2^64 keeps its precision.
template <typename Wide>
double exact_mean(Wide sum, std::int64_t count) {
  const auto divisor = static_cast<Wide>(count);
  return static_cast<double>(sum / divisor) + static_cast<double>(sum % divisor) / static_cast<double>(count);
}

// Extremes, sum of squares and exact mean of `count` integers load(0), load(1), ...
template <typename Value>
struct IntegerSums {
  Value min = std::numeric_limits<Value>::max();
  Value max = std::numeric_limits<Value>::min();
  double sum_squares = 0;
  double mean = 0;
};

template <typename Value, typename Wide, typename Load>
IntegerSums<Value> integer_sums(std::int64_t count, Load load) {
  IntegerSums<Value> sums;
  Wide sum = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const Value value = load(i);
    sum += value;
    sums.sum_squares += static_cast<double>(value) * static_cast<double>(value);
    sums.min = std::min(sums.min, value);
    sums.max = std::max(sums.max, value);
  }
  sums.mean = exact_mean(sum, count);
  return sums;
}

// Integer and bool statistics from the exact values. Order does not matter, so the
// elements are visited as stored (C or Fortran order: `data` holds them densely).
TensorStats integer_stats(const TensorView& tensor) {
  TensorStats stats;
  stats.count = tensor.element_count();
  if (stats.count == 0) return stats;
  IntegerRange range;
  range.is_unsigned = dtype_info(tensor.dtype).kind != DTypeKind::signed_integer;
  double sum_squares = 0;
  if (range.is_unsigned) {
    const auto sums = integer_sums<std::uint64_t, UInt128>(
        stats.count, [&](std::int64_t i) { return load_unsigned(tensor, i); });
    range.unsigned_min = sums.min;
    range.unsigned_max = sums.max;
    stats.mean = sums.mean;
    sum_squares = sums.sum_squares;
  } else {
    const auto sums = integer_sums<std::int64_t, Int128>(
        stats.count, [&](std::int64_t i) { return load_signed(tensor, i); });
    range.signed_min = sums.min;
    range.signed_max = sums.max;
    stats.mean = sums.mean;
    sum_squares = sums.sum_squares;
  }
  stats.min = range.is_unsigned ? static_cast<double>(range.unsigned_min) : static_cast<double>(range.signed_min);
  stats.max = range.is_unsigned ? static_cast<double>(range.unsigned_max) : static_cast<double>(range.signed_max);
  stats.rms = std::sqrt(sum_squares / static_cast<double>(stats.count));
  stats.integer = range;
  return stats;
}

}  // namespace

std::string IntegerRange::min_text() const {
  return is_unsigned ? std::to_string(unsigned_min) : std::to_string(signed_min);
}

std::string IntegerRange::max_text() const {
  return is_unsigned ? std::to_string(unsigned_max) : std::to_string(signed_max);
}

TensorStats compute_tensor_stats(const TensorView& tensor) {
  if (dtype_is_integer(tensor.dtype)) return integer_stats(tensor);
  TensorStats stats;
  stats.count = tensor.element_count();
  if (stats.count == 0) return stats;
  double sum = 0, sum_squares = 0;
  double min = std::numeric_limits<double>::infinity(), max = -min;
  const int last_axis = tensor.shape.empty() ? 0 : static_cast<int>(tensor.shape.size()) - 1;
  const std::int64_t width = tensor.shape.empty() ? 1 : tensor.shape.back();
  for_each_vector(tensor, last_axis, [&](const float* values) {
    for (std::int64_t i = 0; i < width; ++i) {
      const double value = values[i];
      if (!std::isfinite(value)) {
        ++stats.nonfinite;
        continue;
      }
      sum += value;
      sum_squares += value * value;
      min = std::min(min, value);
      max = std::max(max, value);
    }
  });
  const std::int64_t finite = stats.count - stats.nonfinite;
  if (finite > 0) {
    stats.min = min;
    stats.max = max;
    stats.mean = sum / static_cast<double>(finite);
    stats.rms = std::sqrt(sum_squares / static_cast<double>(finite));
  }
  return stats;
}

namespace {

struct RoleWords {
  const char* key;
  const char* value;
  const char* query;  // "" when the convention has none
};

constexpr RoleWords kRoleWords[] = {
    {"k", "v", "q"},
    {"key", "value", "query"},
    {"keys", "values", "queries"},
    {"k_proj", "v_proj", "q_proj"},
    {"key_states", "value_states", "query_states"},
    {"k_cache", "v_cache", ""},
    {"key_cache", "value_cache", ""},
};

// The last run of digits in `text` as a number, or -1.
int last_number(std::string_view text) {
  std::size_t end = text.find_last_of("0123456789");
  if (end == std::string_view::npos) return -1;
  std::size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  if (end + 1 - begin > 9) return -1;
  return std::stoi(std::string(text.substr(begin, end + 1 - begin)));
}

}  // namespace

std::vector<KvTensorNames> find_kv_tensor_names(const TensorFile& file) {
  std::vector<KvTensorNames> found;
  for (const TensorView& tensor : file.tensors()) {
    const std::string& name = tensor.name;
    if (!dtype_is_float(tensor.dtype)) continue;  // token ids named "...k" are no keys
    for (const RoleWords& words : kRoleWords) {
      const std::string_view key_word = words.key;
      if (name.size() <= key_word.size() || !std::string_view(name).ends_with(key_word)) continue;
      const std::size_t stem_size = name.size() - key_word.size();
      const char separator = name[stem_size - 1];
      if (separator != '.' && separator != '_' && separator != '/') continue;
      const std::string stem = name.substr(0, stem_size);
      const std::string values = stem + words.value;
      const TensorView* value_tensor = file.find(values);
      if (value_tensor == nullptr || !dtype_is_float(value_tensor->dtype)) continue;
      KvTensorNames names;
      names.layer = last_number(stem);
      names.keys = name;
      names.values = values;
      if (*words.query != '\0' && file.find(stem + words.query) != nullptr) names.queries = stem + words.query;
      found.push_back(names);
      break;
    }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const KvTensorNames& a, const KvTensorNames& b) { return a.layer < b.layer; });
  return found;
}

KvLayerStats measure_kv_layer(const TensorFile& file, const KvTensorNames& names, int channel_axis, int outliers) {
  KvLayerStats stats;
  stats.names = names;
  const TensorView& keys = file.get(names.keys);
  const TensorView& values = file.get(names.values);
  auto axis_of = [&](const TensorView& tensor) {
    const int rank = static_cast<int>(tensor.shape.size());
    const int axis = channel_axis < 0 ? rank - 1 : channel_axis;
    if (rank == 0 || axis >= rank) {
      fail("'{}': tensor '{}' with shape {} has no channel axis {}", file.path(), printable(tensor.name),
           tensor.shape_string(), axis);
    }
    return axis;
  };
  const int key_axis = axis_of(keys), value_axis = axis_of(values);
  const std::int64_t key_dim = keys.shape[static_cast<std::size_t>(key_axis)];
  const std::int64_t value_dim = values.shape[static_cast<std::size_t>(value_axis)];

  std::vector<double> channel_squares(static_cast<std::size_t>(key_dim), 0.0);
  double norm_sum = 0;
  std::int64_t key_vectors = 0;
  for_each_vector(keys, key_axis, [&](const float* key) {
    double norm2 = 0;
    for (std::int64_t c = 0; c < key_dim; ++c) norm2 += static_cast<double>(key[c]) * key[c];
    if (!std::isfinite(norm2)) return;
    for (std::int64_t c = 0; c < key_dim; ++c)
      channel_squares[static_cast<std::size_t>(c)] += static_cast<double>(key[c]) * key[c];
    norm_sum += std::sqrt(norm2);
    ++key_vectors;
  });
  double value_norm_sum = 0;
  std::int64_t value_vectors = 0;
  for_each_vector(values, value_axis, [&](const float* value) {
    double norm2 = 0;
    for (std::int64_t c = 0; c < value_dim; ++c) norm2 += static_cast<double>(value[c]) * value[c];
    if (!std::isfinite(norm2)) return;
    value_norm_sum += std::sqrt(norm2);
    ++value_vectors;
  });
  file.release(keys);
  file.release(values);

  stats.key_norm_mean = key_vectors > 0 ? norm_sum / static_cast<double>(key_vectors) : 0.0;
  stats.value_norm_mean = value_vectors > 0 ? value_norm_sum / static_cast<double>(value_vectors) : 0.0;
  stats.norm_ratio = stats.value_norm_mean > 0 ? stats.key_norm_mean / stats.value_norm_mean : 0.0;

  // Without a single finite key vector no channel stands out: list none rather than
  // every channel at RMS 0 (a zero-length token axis is a valid, empty tensor).
  if (key_vectors == 0) return stats;
  std::vector<std::pair<int, double>> channels;
  for (std::int64_t c = 0; c < key_dim; ++c) {
    const double rms = std::sqrt(channel_squares[static_cast<std::size_t>(c)] / static_cast<double>(key_vectors));
    channels.emplace_back(static_cast<int>(c), rms);
  }
  std::vector<double> sorted_rms;
  for (const auto& channel : channels) sorted_rms.push_back(channel.second);
  std::sort(sorted_rms.begin(), sorted_rms.end());
  if (!sorted_rms.empty()) {
    const std::size_t n = sorted_rms.size();
    stats.median_key_channel_rms = n % 2 ? sorted_rms[n / 2] : 0.5 * (sorted_rms[n / 2 - 1] + sorted_rms[n / 2]);
  }
  std::stable_sort(channels.begin(), channels.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  channels.resize(std::min(channels.size(), static_cast<std::size_t>(std::max(outliers, 0))));
  stats.outlier_channels = channels;
  return stats;
}

}  // namespace tqlab
