#include "eval/roundtrip_plan.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "core/dtype.h"
#include "core/error.h"
#include "core/text.h"
#include "eval/kv_slab.h"
#include "quant/registry.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

// The tensor formats the writers know, checked before any work so a typo in
// -o does not cost a whole run.
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

// Fails fast, before any tensor is read, when a spec cannot take a head dim.
void check_head_dim(const TensorFile& file, const Quantizer& quantizer, const TensorView& tensor, int dim) {
  try {
    quantizer.check_dim(dim);
  } catch (const InputError& error) {
    fail("'{}': tensor '{}' {}: {}", file.path(), printable(tensor.name), tensor.shape_string(), error.what());
  }
}

}  // namespace

RoundtripPlan plan_roundtrip(const std::string& input_path, const std::string& output_path,
                             const RoundtripOptions& options) {
  RoundtripPlan plan;
  // Specs first: a typo should cost nothing, not even opening the file.
  plan.key_quantizer = make_quantizer(options.key_spec);
  plan.value_quantizer = make_quantizer(options.value_spec);
  if (!options.query_spec.empty()) plan.query_quantizer = make_quantizer(options.query_spec);

  OpenOptions open_options;
  open_options.raw16_as_bf16 = options.raw16_as_bf16;
  plan.file = TensorFile::open(input_path, open_options);
  const TensorFile& file = *plan.file;
  check_output_path(output_path, file);

  const ResolvedKvLayout resolved = resolve_kv_layout(file, options.layout, "--layout");
  plan.layout = resolved.layout;
  KvDumpSpec data;
  data.keys = options.keys;
  data.values = options.values;
  // Without a query spec the queries are copied like any other tensor, so
  // their names and shapes are none of the dump's business.
  data.queries = plan.query_quantizer ? options.queries : "";
  data.queries_required = plan.query_quantizer != nullptr;
  data.layout = plan.layout;
  data.layout_assumed = resolved.source == ResolvedKvLayout::Source::assumed;
  data.layers = options.layers;
  plan.dump = std::make_unique<KvDump>(file, data);
  plan.axes = parse_kv_layout(plan.layout);

  for (std::size_t i = 0; i < plan.dump->layers().size(); ++i) {
    const KvLayerShape& shape = plan.dump->layers()[i];
    const int layer_index = static_cast<int>(i);
    const auto add = [&](const std::string& name_template, Role role, const Quantizer& quantizer, int dim) {
      const TensorView& tensor = file.get(layer_tensor_name(name_template, shape.layer));
      check_head_dim(file, quantizer, tensor, dim);
      plan.work.push_back({&tensor, role, layer_index, &quantizer});
      plan.work_values += tensor.element_count();
    };
    add(data.keys, Role::key, *plan.key_quantizer, shape.key_dim);
    add(data.values, Role::value, *plan.value_quantizer, shape.value_dim);
    if (plan.query_quantizer) add(data.queries, Role::query, *plan.query_quantizer, shape.key_dim);
  }
  // One tensor named by two templates would be quantized twice and written twice.
  for (std::size_t i = 0; i < plan.work.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (plan.work[i].view == plan.work[j].view) {
        fail("'{}': tensor '{}' is named by two templates (keys '{}', values '{}', queries '{}')", file.path(),
             printable(plan.work[i].view->name), data.keys, data.values, data.queries);
      }
    }
  }
  return plan;
}

std::map<std::string, std::string> roundtrip_metadata(const RoundtripPlan& plan, const RoundtripOptions& options) {
  std::map<std::string, std::string> metadata = plan.file->metadata();
  metadata["tqlab.version"] = TQLAB_VERSION;
  metadata["tqlab.git_commit"] = TQLAB_GIT_COMMIT;
  metadata["tqlab.roundtrip.k"] = plan.key_quantizer->spec();
  metadata["tqlab.roundtrip.v"] = plan.value_quantizer->spec();
  if (plan.query_quantizer) metadata["tqlab.roundtrip.q"] = plan.query_quantizer->spec();
  else metadata.erase("tqlab.roundtrip.q");  // a second roundtrip must not inherit the first one's
  metadata["tqlab.roundtrip.seed"] = std::to_string(options.seed);
  metadata["tqlab.roundtrip.layout"] = plan.layout;
  return metadata;
}

std::vector<TensorToWrite> roundtrip_output_tensors(const RoundtripPlan& plan) {
  std::vector<TensorToWrite> tensors;
  for (const TensorView& tensor : plan.file->tensors()) tensors.push_back({tensor.name, tensor.dtype, tensor.shape, {}});
  return tensors;
}

RoundtripTensorResult roundtrip_result_header(const RoundtripPlan& plan, const QuantizedTensor& tensor) {
  const TensorView& view = *tensor.view;
  const KvLayerShape& shape = plan.dump->layers()[static_cast<std::size_t>(tensor.layer_index)];
  RoundtripTensorResult result;
  result.name = view.name;
  result.role = tensor.role;
  result.layer = shape.layer;
  result.spec = tensor.quantizer->spec_for_dim(slab_dim(*plan.dump, KvSlab{tensor.role, tensor.layer_index, 0, 0}));
  result.dtype = view.dtype;
  result.shape = view.shape;
  result.value_count = view.element_count();
  return result;
}

namespace {

// Sums of (x - y)^2 and x^2 over n values, in kLanes interleaved partial sums added up
// at the end: a fixed order (the same bits on every run), and no chain of dependent adds.
// Written with GCC vector types so that it runs in SIMD registers on any x86-64 build.
constexpr std::size_t kLanes = 8;
using Floats4 = float __attribute__((vector_size(16)));
using Doubles4 = double __attribute__((vector_size(32)));

void add_error_sums(std::size_t n, const float* x, const float* y, SlabOutcome& outcome) {
  Doubles4 error[2] = {}, energy[2] = {};  // lanes 0-3 and 4-7
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t half = 0; half < 2; ++half) {
      Floats4 x4, y4;
      std::memcpy(&x4, x + i + 4 * half, sizeof(x4));
      std::memcpy(&y4, y + i + 4 * half, sizeof(y4));
      const Doubles4 value = __builtin_convertvector(x4, Doubles4);
      const Doubles4 difference = value - __builtin_convertvector(y4, Doubles4);
      error[half] += difference * difference;
      energy[half] += value * value;
    }
  }
  for (; i < n; ++i) {
    const double value = x[i];
    const double difference = value - static_cast<double>(y[i]);
    error[0][0] += difference * difference;
    energy[0][0] += value * value;
  }
  for (std::size_t lane = 0; lane < kLanes; ++lane) {
    outcome.squared_error += error[lane / 4][lane % 4];
    outcome.energy += energy[lane / 4][lane % 4];
  }
}

}  // namespace

SlabOutcome roundtrip_slab(const RoundtripPlan& plan, const QuantizedTensor& tensor, int seq, int head,
                           std::uint64_t seed, SlabBuffers& buffers) {
  const KvDump& dump = *plan.dump;
  const TensorView& view = *tensor.view;
  const KvSlab where{tensor.role, tensor.layer_index, seq, head};
  const auto dim = static_cast<std::size_t>(slab_dim(dump, where));
  const std::size_t slab_size = static_cast<std::size_t>(slab_tokens(dump, where)) * dim;
  const std::size_t element_size = dtype_size(view.dtype);
  // Little-endian f32 slabs that are one aligned run of the input are quantized where they
  // lie (in the mapping); every other slab is read (converted) into `input` first.
  const float* x = nullptr;
  if (view.dtype == DType::f32 && !view.big_endian && slab_size > 0 &&
      slab_is_contiguous(plan.axes, view.strides, static_cast<int>(dim))) {
    const std::byte* at = view.data + slab_base(plan.axes, view.strides, seq, head) * 4;
    if (reinterpret_cast<std::uintptr_t>(at) % alignof(float) == 0) x = reinterpret_cast<const float*>(at);
  }
  if (x == nullptr) {
    read_slab(dump, where, buffers.input);
    x = buffers.input.data();
  }
  buffers.decoded.resize(slab_size);

  SlabOutcome outcome;
  outcome.encoded_bytes = fake_quantize(dump, where, *tensor.quantizer, seed, x, buffers.decoded.data());
  float* decoded = buffers.decoded.data();
  if (view.dtype == DType::f32) {
    // The decoded floats are what the file holds: no conversion, no copy.
    buffers.out = std::as_bytes(std::span<const float>(decoded, slab_size));
    add_error_sums(slab_size, x, decoded, outcome);
  } else {
    // The error is measured on what the file will hold, after rounding to its dtype.
    buffers.stored.resize(slab_size * element_size);
    buffers.rounded.resize(slab_size);
    std::byte* stored = buffers.stored.data();
    for (std::size_t i = 0; i < slab_size; ++i) {
      buffers.rounded[i] = store_element(decoded[i], view.dtype, stored + i * element_size);
    }
    buffers.out = std::span<const std::byte>(stored, slab_size * element_size);
    add_error_sums(slab_size, x, buffers.rounded.data(), outcome);
  }
  // x is finite (quantizers refuse anything else), so a stored Inf or NaN shows in the sum.
  if (!std::isfinite(outcome.squared_error)) {
    std::byte scratch[8];
    for (std::size_t i = 0; i < slab_size; ++i) {
      if (std::isfinite(store_element(decoded[i], view.dtype, scratch))) continue;
      fail("'{}': tensor '{}', sequence {}, head {}: '{}' decodes token {}, channel {} to {}, which {} cannot hold",
           dump.file().path(), printable(view.name), seq, head, tensor.quantizer->spec_for_dim(static_cast<int>(dim)),
           i / dim, i % dim, decoded[i], dtype_name(view.dtype));
    }
  }
  return outcome;
}

std::int64_t slab_base(const KvLayout& axes, const std::vector<std::int64_t>& strides, int seq, int head) {
  const auto stride = [&](int axis) { return axis < 0 ? 0 : strides[static_cast<std::size_t>(axis)]; };
  return seq * stride(axes.seq_axis) + head * stride(axes.head_axis);
}

bool slab_is_contiguous(const KvLayout& axes, const std::vector<std::int64_t>& strides, int dim) {
  return strides[static_cast<std::size_t>(axes.dim_axis)] == 1 &&
         strides[static_cast<std::size_t>(axes.token_axis)] == dim;
}

}  // namespace tqlab
