// A KV dump: per layer, the keys, values and (optionally) queries of one
// model run, presented as [seq][head][token][dim] whatever the stored layout.
//
// Names come from templates with a `{layer}` placeholder ("layers.{layer}.k");
// the layers present are found from the names. The layout string names the
// stored axes in order: `head`, `token`, `dim`, and optionally `seq` (or its
// synonym `batch`) for independent sequences, e.g. "seq head token dim" or
// "token head dim". Nothing is copied but the one (seq, head) slab asked for.
//
// Checked at construction (InputError naming the file, tensor and rule):
// every K, V and Q tensor is of a float type (f8_e4m3 and f8_e5m2 included:
// fp8 caches are real, and their values convert to float exactly), so an
// integer, bool or raw16 tensor named by a template is refused with its dtype;
// K and V agree in sequences, heads and tokens (head dims may differ, as in
// MLA models with K 192 / V 128, and may change from layer to layer); Q, when
// present, agrees with K in sequences, tokens and head dim, and its head
// count is a multiple of K's (grouped-query attention: q head h reads kv head
// h * kv_heads / q_heads).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/tensor_file.h"

namespace tqlab {

/// Where the tensors are and how they are laid out (the sweep config's "data").
struct KvDumpSpec {
  std::string keys = "layers.{layer}.k";
  std::string values = "layers.{layer}.v";
  std::string queries = "layers.{layer}.q";  ///< empty: no queries
  bool queries_required = false;             ///< when false, missing queries are fine
  std::string layout = "head token dim";
  std::optional<std::vector<int>> layers;    ///< nullopt: all layers found
  /// True when nobody named `layout` (no option, no metadata: resolve_kv_layout's
  /// default): KvDump then warns when a 3-axis tensor has more "heads" than
  /// "tokens", the mark of a "token head dim" file read as "head token dim".
  bool layout_assumed = false;
};

/// Axis positions of a parsed layout string.
struct KvLayout {
  int rank = 0;
  int seq_axis = -1;  ///< -1 when the layout has no seq/batch axis
  int head_axis = -1;
  int token_axis = -1;
  int dim_axis = -1;
};

/// Parses "seq head token dim" and friends; InputError names what is wrong.
KvLayout parse_kv_layout(const std::string& layout);

/// The layout assumed when neither the user nor the file names one.
inline constexpr const char* kDefaultKvLayout = "head token dim";

/// A dump's layout and where it came from.
struct ResolvedKvLayout {
  enum class Source { option, metadata, assumed };
  std::string layout;
  Source source = Source::assumed;
};

/// The layout of `file`'s K/V/Q tensors: `option` when not empty, else the
/// file's "layout" metadata, else kDefaultKvLayout (assumed). An option that
/// contradicts the metadata (other axes or order; "seq" and "batch" are one)
/// wins, with a warning naming both, `option_name` (e.g. "--layout") and the file.
ResolvedKvLayout resolve_kv_layout(const TensorFile& file, const std::string& option,
                                   std::string_view option_name);

/// Sizes of one layer.
struct KvLayerShape {
  int layer = 0;      ///< the layer number in the names
  int seqs = 1;
  int kv_heads = 0;
  int q_heads = 0;    ///< 0 when there are no queries
  int tokens = 0;
  int key_dim = 0;
  int value_dim = 0;
};

/// Layer numbers found in `file` for a template with `{layer}`, ascending.
std::vector<int> find_template_layers(const TensorFile& file, const std::string& name_template);

/// `name_template` with `{layer}` replaced by `layer`.
std::string layer_tensor_name(const std::string& name_template, int layer);

/// A layer selection as users write it: "all" (nullopt: every layer found),
/// or numbers and inclusive ranges, "0,2,5" or "0-3,8". InputError names the text.
std::optional<std::vector<int>> parse_layer_list(const std::string& text);

class KvDump {
 public:
  /// Validates every selected layer's tensors. `file` must outlive the dump.
  KvDump(const TensorFile& file, KvDumpSpec spec);

  const TensorFile& file() const { return file_; }
  const KvDumpSpec& spec() const { return spec_; }
  bool has_queries() const { return has_queries_; }
  /// One entry per selected layer, in ascending layer order.
  const std::vector<KvLayerShape>& layers() const { return layers_; }

  /// Copies keys of (layers()[layer_index], seq, kv head) as [token][key_dim] floats.
  void read_keys(int layer_index, int seq, int head, float* out) const;
  /// Copies values as [token][value_dim] floats.
  void read_values(int layer_index, int seq, int head, float* out) const;
  /// Copies queries of a q head as [token][key_dim] floats. Requires has_queries().
  void read_queries(int layer_index, int seq, int q_head, float* out) const;

  /// Gives back the resident pages of one layer's tensors.
  void release_layer(int layer_index) const;

 private:
  struct LayerTensors {
    const TensorView* keys = nullptr;
    const TensorView* values = nullptr;
    const TensorView* queries = nullptr;
  };
  void read_slab(const TensorView& tensor, int seq, int head, float* out) const;

  const TensorFile& file_;
  KvDumpSpec spec_;
  KvLayout layout_;
  bool has_queries_ = false;
  std::vector<KvLayerShape> layers_;
  std::vector<LayerTensors> tensors_;
};

}  // namespace tqlab
