#include "kv/kv_dump.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <sstream>

#include <fmt/ranges.h>

#include "core/decimal.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text.h"

namespace tqlab {
namespace {

constexpr std::string_view kLayerPlaceholder = "{layer}";
constexpr int kMaxLayerNumber = 1 << 20;

std::pair<std::string_view, std::string_view> split_template(const std::string& name_template) {
  const std::size_t at = name_template.find(kLayerPlaceholder);
  if (at == std::string::npos) {
    fail("name template '{}' has no {{layer}} placeholder (e.g. \"layers.{{layer}}.k\")", name_template);
  }
  const std::string_view whole = name_template;
  return {whole.substr(0, at), whole.substr(at + kLayerPlaceholder.size())};
}

int checked_extent(const TensorView& tensor, int axis, const std::string& path) {
  const std::int64_t extent = tensor.shape[static_cast<std::size_t>(axis)];
  if (extent > std::numeric_limits<int>::max()) {
    fail("'{}': tensor '{}' axis {} has {} entries, more than tqlab handles", path, printable(tensor.name), axis,
         extent);
  }
  return static_cast<int>(extent);
}

// The layout's words joined by single spaces.
std::string normalized_layout(const std::string& layout) {
  std::istringstream words(layout);
  std::string word, joined;
  while (words >> word) joined += (joined.empty() ? "" : " ") + word;
  return joined;
}

}  // namespace

KvLayout parse_kv_layout(const std::string& layout) {
  KvLayout parsed;
  std::istringstream words(layout);
  std::string word;
  while (words >> word) {
    int* slot = nullptr;
    if (word == "seq" || word == "batch")
      slot = &parsed.seq_axis;
    else if (word == "head")
      slot = &parsed.head_axis;
    else if (word == "token")
      slot = &parsed.token_axis;
    else if (word == "dim")
      slot = &parsed.dim_axis;
    else
      fail("layout '{}': unknown axis '{}' (axes: seq|batch, head, token, dim)", layout, word);
    if (*slot >= 0) fail("layout '{}': axis '{}' named twice", layout, word);
    *slot = parsed.rank++;
  }
  if (parsed.head_axis < 0 || parsed.token_axis < 0 || parsed.dim_axis < 0) {
    fail("layout '{}' must name the axes head, token and dim (and optionally seq), e.g. \"seq head token dim\"",
         layout);
  }
  return parsed;
}

ResolvedKvLayout resolve_kv_layout(const TensorFile& file, const std::string& option, std::string_view option_name) {
  const auto found = file.metadata().find("layout");
  if (option.empty()) {
    if (found != file.metadata().end()) return {found->second, ResolvedKvLayout::Source::metadata};
    return {kDefaultKvLayout, ResolvedKvLayout::Source::assumed};
  }
  const KvLayout named = parse_kv_layout(option);  // a bad option is its own error, not a contradiction
  if (found != file.metadata().end()) {
    bool same = false;
    try {
      const KvLayout stored = parse_kv_layout(found->second);
      same = named.rank == stored.rank && named.seq_axis == stored.seq_axis && named.head_axis == stored.head_axis &&
             named.token_axis == stored.token_axis && named.dim_axis == stored.dim_axis;
    } catch (const InputError&) {
      same = false;  // unreadable metadata is not what the option says either
    }
    if (!same) {
      log::warn("{} '{}' contradicts the layout metadata '{}' of '{}'; using {} '{}'", option_name, option,
                found->second, file.path(), option_name, option);
    }
  }
  return {option, ResolvedKvLayout::Source::option};
}

std::vector<int> find_template_layers(const TensorFile& file, const std::string& name_template) {
  const auto [prefix, suffix] = split_template(name_template);
  std::vector<int> layers;
  for (const TensorView& tensor : file.tensors()) {
    const std::string_view name = tensor.name;
    if (name.size() <= prefix.size() + suffix.size()) continue;
    if (!name.starts_with(prefix) || !name.ends_with(suffix)) continue;
    const std::string_view middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    int layer = 0;
    const auto [stop, error] = std::from_chars(middle.data(), middle.data() + middle.size(), layer);
    if (error != std::errc() || stop != middle.data() + middle.size() || layer < 0) continue;
    if (layer_tensor_name(name_template, layer) != name) continue;  // "01" is not layer 1
    layers.push_back(layer);
  }
  std::sort(layers.begin(), layers.end());
  return layers;
}

std::string layer_tensor_name(const std::string& name_template, int layer) {
  const auto [prefix, suffix] = split_template(name_template);
  return fmt::format("{}{}{}", prefix, layer, suffix);
}

std::optional<std::vector<int>> parse_layer_list(const std::string& text) {
  if (text == "all") return std::nullopt;
  const auto number = [&](std::string_view digits) {
    // The bound keeps a typo like "0-99999999" from allocating a huge list.
    const std::optional<std::int64_t> value = decimal_integer(digits, 0, kMaxLayerNumber);
    if (!value) {
      fail(
          "layer list '{}': '{}' is not a layer number (0..{}); expected \"all\" or numbers and ranges, "
          "e.g. \"0,2,5-7\"",
          text, digits, kMaxLayerNumber);
    }
    return static_cast<int>(*value);
  };
  std::vector<int> layers;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      layers.push_back(number(item));
    } else {
      const int first = number(item.substr(0, dash));
      const int last = number(item.substr(dash + 1));
      if (first > last) fail("layer list '{}': range '{}' runs backwards", text, item);
      for (int layer = first; layer <= last; ++layer) layers.push_back(layer);
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return layers;
}

namespace {

// The layers the keys template matches, or those of spec.layers (each checked to be there), sorted, once each.
std::vector<int> select_layers(const TensorFile& file, const KvDumpSpec& spec) {
  const std::vector<int> found = find_template_layers(file, spec.keys);
  if (found.empty()) {
    fail("'{}': no tensor matches the keys template '{}' (it has: {})", file.path(), printable(spec.keys),
         file.name_list());
  }
  if (!spec.layers) return found;
  std::vector<int> selected = *spec.layers;
  for (int layer : selected) {
    if (!std::binary_search(found.begin(), found.end(), layer)) {
      fail("'{}': layer {} was asked for, but the keys template '{}' matches layers {}", file.path(), layer, spec.keys,
           fmt::join(found, ","));
    }
  }
  std::sort(selected.begin(), selected.end());
  selected.erase(std::unique(selected.begin(), selected.end()), selected.end());
  return selected;
}

// Layer `layer`'s tensor of `name_template`: present, of a float type, of the layout's rank, not empty.
const TensorView& checked_tensor(const TensorFile& file, const KvDumpSpec& spec, const KvLayout& layout,
                                 const std::string& name_template, int layer) {
  const std::string& path = file.path();
  const std::string name = layer_tensor_name(name_template, layer);
  if (file.find(name) == nullptr) {
    // Name the template too: the user wrote the template, not the name.
    fail("'{}': layer {} has keys '{}' but no tensor '{}' (template '{}')", path, layer,
         layer_tensor_name(spec.keys, layer), name, name_template);
  }
  const TensorView& tensor = file.get(name);
  if (!dtype_is_float(tensor.dtype)) {
    // numpy has no bfloat16: bf16 dumps in .npy/.npz store its bits as '<u2' or '|V2'.
    const bool bits16 = tensor.dtype == DType::raw16 || tensor.dtype == DType::u16;
    const std::string hint = bits16 && file.format() != "safetensors"
                                 ? " (bfloat16 bits in npy '<u2'/'|V2'? --bf16 reads them as bfloat16)"
                                 : "";
    fail("'{}': tensor '{}' (template '{}') is {}, but keys, values and queries must be floats: {}{}", path,
         printable(tensor.name), printable(name_template), dtype_name(tensor.dtype), float_dtype_names(), hint);
  }
  if (static_cast<int>(tensor.shape.size()) != layout.rank) {
    // One axis too many and none for sequences: most likely a batch axis first,
    // as Hugging Face stores its KV caches ("batch head token dim").
    std::string hint;
    if (static_cast<int>(tensor.shape.size()) == layout.rank + 1 && layout.seq_axis < 0) {
      hint = fmt::format("; a {}-axis dump with a batch axis first is \"batch {}\"", tensor.shape.size(),
                         normalized_layout(spec.layout));
    }
    fail("'{}': tensor '{}' has shape {} ({} axes) but the layout '{}' names {} axes{}", path, printable(tensor.name),
         tensor.shape_string(), tensor.shape.size(), spec.layout, layout.rank, hint);
  }
  if (tensor.element_count() == 0) {
    fail("'{}': tensor '{}' is empty (shape {})", path, printable(tensor.name), tensor.shape_string());
  }
  return tensor;
}

int extent_of(const TensorView& tensor, int axis, const std::string& path) {
  return axis < 0 ? 1 : checked_extent(tensor, axis, path);
}

// The shape of one layer's keys k and values v, checked to agree (q_heads left 0).
KvLayerShape layer_shape(const std::string& path, const KvDumpSpec& spec, const KvLayout& layout, int layer,
                         const TensorView& k, const TensorView& v) {
  const auto extent = [&](const TensorView& tensor, int axis) { return extent_of(tensor, axis, path); };
  KvLayerShape shape;
  shape.layer = layer;
  shape.seqs = extent(k, layout.seq_axis);
  shape.kv_heads = extent(k, layout.head_axis);
  shape.tokens = extent(k, layout.token_axis);
  shape.key_dim = extent(k, layout.dim_axis);
  shape.value_dim = extent(v, layout.dim_axis);
  if (extent(v, layout.seq_axis) != shape.seqs || extent(v, layout.head_axis) != shape.kv_heads ||
      extent(v, layout.token_axis) != shape.tokens) {
    fail("'{}': keys '{}' {} and values '{}' {} disagree in sequences, heads or tokens (layout '{}')", path,
         printable(k.name), k.shape_string(), printable(v.name), v.shape_string(), spec.layout);
  }
  return shape;
}

// The query heads of a layer of `shape` whose queries are q and keys k, checked to agree with them.
int query_heads(const std::string& path, const KvDumpSpec& spec, const KvLayout& layout, const KvLayerShape& shape,
                const TensorView& q, const TensorView& k) {
  const auto extent = [&](const TensorView& tensor, int axis) { return extent_of(tensor, axis, path); };
  const int q_heads = extent(q, layout.head_axis);
  if (extent(q, layout.seq_axis) != shape.seqs || extent(q, layout.token_axis) != shape.tokens ||
      extent(q, layout.dim_axis) != shape.key_dim) {
    fail("'{}': queries '{}' {} and keys '{}' {} disagree in sequences, tokens or head dim (layout '{}')", path,
         printable(q.name), q.shape_string(), printable(k.name), k.shape_string(), spec.layout);
  }
  if (q_heads % shape.kv_heads != 0) {
    fail(
        "'{}': queries '{}' have {} heads, not a multiple of the {} key/value heads of '{}' (grouped-query "
        "attention needs q_heads = g * kv_heads)",
        path, printable(q.name), q_heads, shape.kv_heads, printable(k.name));
  }
  return q_heads;
}

}  // namespace

KvDump::KvDump(const TensorFile& file, KvDumpSpec spec)
    : file_(file), spec_(std::move(spec)), layout_(parse_kv_layout(spec_.layout)) {
  const std::string& path = file_.path();
  const std::vector<int> selected = select_layers(file_, spec_);
  has_queries_ = !spec_.queries.empty() && file_.find(layer_tensor_name(spec_.queries, selected.front())) != nullptr;
  if (!has_queries_ && spec_.queries_required) {
    fail("'{}': no queries: tensor '{}' not found (queries template '{}')", path,
         spec_.queries.empty() ? "" : layer_tensor_name(spec_.queries, selected.front()), spec_.queries);
  }
  for (int layer : selected) {
    LayerTensors tensors;
    tensors.keys = &checked_tensor(file_, spec_, layout_, spec_.keys, layer);
    tensors.values = &checked_tensor(file_, spec_, layout_, spec_.values, layer);
    KvLayerShape shape = layer_shape(path, spec_, layout_, layer, *tensors.keys, *tensors.values);
    if (has_queries_) {
      tensors.queries = &checked_tensor(file_, spec_, layout_, spec_.queries, layer);
      shape.q_heads = query_heads(path, spec_, layout_, shape, *tensors.queries, *tensors.keys);
    }
    if (spec_.layout_assumed && layers_.empty() && layout_.rank == 3 && shape.kv_heads > shape.tokens) {
      log::warn(
          "'{}': no layout named and none in the file's metadata, so '{}' {} is read as \"{}\": {} heads "
          "of {} tokens; more heads than tokens suggests a \"token head dim\" file: name the layout",
          path, tensors.keys->name, tensors.keys->shape_string(), spec_.layout, shape.kv_heads, shape.tokens);
    }
    layers_.push_back(shape);
    tensors_.push_back(tensors);
  }
}

void KvDump::read_slab(const TensorView& tensor, int seq, int head, float* out) const {
  auto stride = [&](int axis) { return tensor.strides[static_cast<std::size_t>(axis)]; };
  std::int64_t base = static_cast<std::int64_t>(head) * stride(layout_.head_axis);
  if (layout_.seq_axis >= 0) base += static_cast<std::int64_t>(seq) * stride(layout_.seq_axis);
  const std::int64_t tokens = tensor.shape[static_cast<std::size_t>(layout_.token_axis)];
  const std::int64_t dim = tensor.shape[static_cast<std::size_t>(layout_.dim_axis)];
  const std::int64_t token_stride = stride(layout_.token_axis);
  const std::int64_t dim_stride = stride(layout_.dim_axis);
  if (token_stride == dim * dim_stride) {  // the whole slab is one strided run
    read_floats(tensor, base, dim_stride, tokens * dim, out);
    return;
  }
  for (std::int64_t token = 0; token < tokens; ++token) {
    read_floats(tensor, base + token * token_stride, dim_stride, dim, out + token * dim);
  }
}

void KvDump::read_keys(int layer_index, int seq, int head, float* out) const {
  read_slab(*tensors_.at(static_cast<std::size_t>(layer_index)).keys, seq, head, out);
}

void KvDump::read_values(int layer_index, int seq, int head, float* out) const {
  read_slab(*tensors_.at(static_cast<std::size_t>(layer_index)).values, seq, head, out);
}

void KvDump::read_queries(int layer_index, int seq, int q_head, float* out) const {
  const LayerTensors& tensors = tensors_.at(static_cast<std::size_t>(layer_index));
  if (tensors.queries == nullptr) fail("'{}': this dump has no queries", file_.path());
  read_slab(*tensors.queries, seq, q_head, out);
}

void KvDump::release_layer(int layer_index) const {
  const LayerTensors& tensors = tensors_.at(static_cast<std::size_t>(layer_index));
  for (const TensorView* tensor : {tensors.keys, tensors.values, tensors.queries}) {
    if (tensor != nullptr) file_.release(*tensor);
  }
}

}  // namespace tqlab
