#include "eval/roundtrip.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <span>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text.h"
#include "eval/kv_slab.h"
#include "quant/registry.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

// Above this many quantized values a run takes seconds: report each layer at
// info level so the user sees it move; below it, only with --verbose.
constexpr std::int64_t kProgressValues = std::int64_t{1} << 24;

// The tensor formats write_tensor_file knows, checked before any work so a
// typo in -o does not cost a whole run.
void check_output_path(const std::string& output_path, const TensorFile& input) {
  const std::filesystem::path path(output_path);
  const std::string extension = path.extension().string();
  // A dump has at least keys and values (KvDump refuses one tensor named by
  // both templates), so a one-tensor .npy could never hold the output.
  if (extension == ".npy") {
    fail("'{}': a .npy file holds one tensor, but '{}' has {}; use .npz or .safetensors", output_path,
         input.path(), input.tensors().size());
  }
  if (extension != ".safetensors" && extension != ".npz") {
    fail("'{}': unknown output format, expected a name ending in .safetensors or .npz", output_path);
  }
  const std::filesystem::path directory = path.has_parent_path() ? path.parent_path() : ".";
  if (!std::filesystem::is_directory(directory)) {
    fail("'{}': directory '{}' does not exist", output_path, directory.string());
  }
}

// Copies one [token][dim] slab of elements (element_size bytes each, packed)
// to its place in a C-order tensor: element (t, d) goes to
// base + t * token_stride + d * dim_stride (in elements).
void scatter_slab(std::int64_t tokens, int dim, std::size_t element_size, const std::byte* slab, std::int64_t base,
                  std::int64_t token_stride, std::int64_t dim_stride, std::byte* tensor) {
  const auto row_bytes = static_cast<std::size_t>(dim) * element_size;
  std::byte* at = tensor + static_cast<std::size_t>(base) * element_size;
  // "head token dim" and friends: the slab is one run; "token head dim": rows are.
  if (dim_stride == 1 && token_stride == dim) {
    std::memcpy(at, slab, static_cast<std::size_t>(tokens) * row_bytes);
    return;
  }
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::byte* row = at + static_cast<std::size_t>(t * token_stride) * element_size;
    const std::byte* from = slab + static_cast<std::size_t>(t) * row_bytes;
    if (dim_stride == 1) {
      std::memcpy(row, from, row_bytes);
      continue;
    }
    for (int d = 0; d < dim; ++d) {
      std::memcpy(row + static_cast<std::size_t>(d * dim_stride) * element_size, from + d * element_size,
                  element_size);
    }
  }
}

// One tensor to quantize: which role it plays in which selected layer.
struct QuantizedTensor {
  const TensorView* view = nullptr;
  Role role = Role::key;
  int layer_index = 0;
  const Quantizer* quantizer = nullptr;
};

class TensorRoundtrip {
 public:
  TensorRoundtrip(const KvDump& dump, const KvLayout& layout, std::uint64_t seed)
      : dump_(dump), layout_(layout), seed_(seed) {}

  // Quantizes every (sequence, head) slab of `tensor` and writes the decoded
  // values, rounded to the tensor's dtype, into `out` (C order, that dtype).
  RoundtripTensorResult run(const QuantizedTensor& tensor, std::vector<std::byte>& out) const {
    const TensorView& view = *tensor.view;
    const KvLayerShape& shape = dump_.layers()[static_cast<std::size_t>(tensor.layer_index)];
    const int heads = role_heads(dump_, tensor.layer_index, tensor.role);
    const int dim = slab_dim(dump_, KvSlab{tensor.role, tensor.layer_index, 0, 0});
    const std::int64_t tokens = shape.tokens;

    RoundtripTensorResult result;
    result.name = view.name;
    result.role = tensor.role;
    result.layer = shape.layer;
    result.spec = tensor.quantizer->spec_for_dim(dim);
    result.dtype = view.dtype;
    result.shape = view.shape;
    result.value_count = view.element_count();

    const std::size_t element_size = dtype_size(view.dtype);
    out.assign(static_cast<std::size_t>(result.value_count) * element_size, std::byte{0});
    const std::vector<std::int64_t> strides = c_order_strides(view.shape);
    const auto stride = [&](int axis) { return axis < 0 ? 0 : strides[static_cast<std::size_t>(axis)]; };

    const auto slab_size = static_cast<std::size_t>(tokens * dim);
    std::vector<float> slab, decoded(slab_size);
    std::vector<std::byte> stored_slab(slab_size * element_size);
    for (int seq = 0; seq < shape.seqs; ++seq) {
      for (int head = 0; head < heads; ++head) {
        const KvSlab where{tensor.role, tensor.layer_index, seq, head};
        read_slab(dump_, where, slab);
        result.encoded_bytes += fake_quantize(dump_, where, *tensor.quantizer, seed_, slab.data(), decoded.data());
        // The error is measured on what the file will hold, after rounding to its dtype.
        for (std::size_t i = 0; i < slab_size; ++i) {
          const float stored = store_element(decoded[i], view.dtype, stored_slab.data() + i * element_size);
          if (!std::isfinite(stored)) {
            fail("'{}': tensor '{}', sequence {}, head {}: '{}' decodes token {}, channel {} to {}, which {} "
                 "cannot hold",
                 dump_.file().path(), printable(view.name), seq, head, result.spec, i / static_cast<std::size_t>(dim),
                 i % static_cast<std::size_t>(dim), decoded[i], dtype_name(view.dtype));
          }
          const double difference = static_cast<double>(slab[i]) - stored;
          result.squared_error += difference * difference;
          result.energy += static_cast<double>(slab[i]) * slab[i];
        }
        scatter_slab(tokens, dim, element_size, stored_slab.data(),
                     seq * stride(layout_.seq_axis) + head * stride(layout_.head_axis), stride(layout_.token_axis),
                     stride(layout_.dim_axis), out.data());
      }
    }
    return result;
  }

 private:
  const KvDump& dump_;
  const KvLayout& layout_;
  std::uint64_t seed_;
};

// Fails fast, before any tensor is read, when a spec cannot take a head dim.
void check_head_dim(const TensorFile& file, const Quantizer& quantizer, const TensorView& tensor, int dim) {
  try {
    quantizer.check_dim(dim);
  } catch (const InputError& error) {
    fail("'{}': tensor '{}' {}: {}", file.path(), printable(tensor.name), tensor.shape_string(), error.what());
  }
}

}  // namespace

double RoundtripTensorResult::bits_per_value() const {
  return value_count > 0 ? 8.0 * static_cast<double>(encoded_bytes) / static_cast<double>(value_count) : 0.0;
}

double RoundtripTensorResult::relative_mse() const {
  if (energy > 0) return squared_error / energy;
  return squared_error == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

RoundtripReport run_roundtrip(const std::string& input_path, const std::string& output_path,
                              const RoundtripOptions& options) {
  // Specs first: a typo should cost nothing, not even opening the file.
  const std::unique_ptr<Quantizer> key_quantizer = make_quantizer(options.key_spec);
  const std::unique_ptr<Quantizer> value_quantizer = make_quantizer(options.value_spec);
  std::unique_ptr<Quantizer> query_quantizer;
  if (!options.query_spec.empty()) query_quantizer = make_quantizer(options.query_spec);

  OpenOptions open_options;
  open_options.raw16_as_bf16 = options.raw16_as_bf16;
  const std::unique_ptr<TensorFile> file = TensorFile::open(input_path, open_options);
  check_output_path(output_path, *file);

  RoundtripReport report;
  const ResolvedKvLayout resolved = resolve_kv_layout(*file, options.layout, "--layout");
  report.layout = resolved.layout;
  KvDumpSpec data;
  data.keys = options.keys;
  data.values = options.values;
  // Without a query spec the queries are copied like any other tensor, so
  // their names and shapes are none of the dump's business.
  data.queries = query_quantizer ? options.queries : "";
  data.queries_required = query_quantizer != nullptr;
  data.layout = report.layout;
  data.layout_assumed = resolved.source == ResolvedKvLayout::Source::assumed;
  data.layers = options.layers;
  const KvDump dump(*file, data);
  const KvLayout layout = parse_kv_layout(report.layout);

  std::vector<QuantizedTensor> work;
  std::int64_t work_values = 0;
  for (std::size_t i = 0; i < dump.layers().size(); ++i) {
    const KvLayerShape& shape = dump.layers()[i];
    const int layer_index = static_cast<int>(i);
    const auto add = [&](const std::string& name_template, Role role, const Quantizer& quantizer, int dim) {
      const TensorView& tensor = file->get(layer_tensor_name(name_template, shape.layer));
      check_head_dim(*file, quantizer, tensor, dim);
      work.push_back({&tensor, role, layer_index, &quantizer});
      work_values += tensor.element_count();
    };
    add(data.keys, Role::key, *key_quantizer, shape.key_dim);
    add(data.values, Role::value, *value_quantizer, shape.value_dim);
    if (query_quantizer) add(data.queries, Role::query, *query_quantizer, shape.key_dim);
  }
  // One tensor named by two templates would be quantized twice and written twice.
  for (std::size_t i = 0; i < work.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (work[i].view == work[j].view) {
        fail("'{}': tensor '{}' is named by two templates (keys '{}', values '{}', queries '{}')", file->path(),
             printable(work[i].view->name), data.keys, data.values, data.queries);
      }
    }
  }

  // Layer by layer, so each layer's pages can be given back when it is done.
  const bool show_progress = work_values >= kProgressValues;
  const TensorRoundtrip roundtrip(dump, layout, options.seed);
  std::map<const TensorView*, std::vector<std::byte>> written;
  std::map<const TensorView*, RoundtripTensorResult> results;
  for (std::size_t i = 0; i < work.size(); ++i) {
    const QuantizedTensor& tensor = work[i];
    results[tensor.view] = roundtrip.run(tensor, written[tensor.view]);
    const bool layer_done = i + 1 == work.size() || work[i + 1].layer_index != tensor.layer_index;
    if (!layer_done) continue;
    dump.release_layer(tensor.layer_index);
    const std::string message = fmt::format("roundtrip: layer {} done ({} of {})",
                                            dump.layers()[static_cast<std::size_t>(tensor.layer_index)].layer,
                                            tensor.layer_index + 1, dump.layers().size());
    log::write(show_progress ? log::Level::info : log::Level::debug, message);
  }

  std::vector<TensorToWrite> outputs;
  std::vector<std::vector<std::byte>> copies;  // tensors the writer cannot take straight from the input
  copies.reserve(file->tensors().size());
  for (const TensorView& tensor : file->tensors()) {
    TensorToWrite output{tensor.name, tensor.dtype, tensor.shape, {}};
    if (const auto found = written.find(&tensor); found != written.end()) {
      output.bytes = found->second;
      report.tensors.push_back(results.at(&tensor));
    } else {
      ++report.copied_tensors;
      if (tensor.is_c_contiguous() && !tensor.big_endian) {
        output.bytes = std::span<const std::byte>(tensor.data, tensor.byte_size);
      } else {
        copies.push_back(read_all_bytes(tensor));
        output.bytes = copies.back();
      }
    }
    outputs.push_back(output);
  }

  std::map<std::string, std::string> metadata = file->metadata();
  metadata["tqlab.version"] = TQLAB_VERSION;
  metadata["tqlab.git_commit"] = TQLAB_GIT_COMMIT;
  metadata["tqlab.roundtrip.k"] = key_quantizer->spec();
  metadata["tqlab.roundtrip.v"] = value_quantizer->spec();
  if (query_quantizer) metadata["tqlab.roundtrip.q"] = query_quantizer->spec();
  else metadata.erase("tqlab.roundtrip.q");  // a second roundtrip must not inherit the first one's
  metadata["tqlab.roundtrip.seed"] = std::to_string(options.seed);
  metadata["tqlab.roundtrip.layout"] = report.layout;
  write_tensor_file(output_path, outputs, metadata);
  return report;
}

}  // namespace tqlab
