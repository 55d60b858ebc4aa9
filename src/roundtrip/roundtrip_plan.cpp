#include "roundtrip/roundtrip_plan.h"

#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/engine.h"
#include "kv/kv_slab.h"
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
    fail("'{}': a .npy file holds one tensor, but '{}' has {}; use .npz or .safetensors", output_path, input.path(),
         input.tensors().size());
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

// --engine: the engine's cache for keys and values (its own writer, order and rotation), checked
// as a run of it is (its cache types, one for every layer; queries are the engine's to convert).
void plan_engine_quantizers(const RoundtripOptions& options, RoundtripPlan& plan) {
  const std::unique_ptr<Engine> engine = parse_engine(options.engine, "--engine");
  if (!options.query_spec.empty()) {
    fail("--q '{}' with --engine {}: the engine converts queries itself, it does not store them; leave --q out",
         options.query_spec, engine->spelling());
  }
  if (!engine->presets().empty()) {
    // vLLM's: its formats are tqlab's own quantizers; which layers it keeps unquantized is a model's run.
    const EngineSpecs defined = engine->defined_specs();
    fail("--engine {}: roundtrip takes no preset engine; a preset's formats are tqlab's own specs, roundtrip "
         "them without --engine{}",
         engine->spelling(), defined.k.empty() ? "" : fmt::format(": --k {} --v {}", defined.k, defined.v));
  }
  EngineRunRequest request;
  request.k = options.key_spec;
  request.v = options.value_spec;
  request.where = "--k/--v";
  engine->check_run(request);
  plan.engine = engine->spelling();
  plan.key_quantizer = engine_cache_quantizer(*engine, options.key_spec);
  plan.value_quantizer = engine_cache_quantizer(*engine, options.value_spec);
}

}  // namespace

RoundtripPlan plan_roundtrip(const std::string& input_path, const std::string& output_path,
                             const RoundtripOptions& options) {
  RoundtripPlan plan;
  // Specs first: a typo should cost nothing, not even opening the file.
  if (is_default_engine(options.engine)) {
    plan.key_quantizer = make_quantizer(options.key_spec);
    plan.value_quantizer = make_quantizer(options.value_spec);
  } else {
    plan_engine_quantizers(options, plan);
  }
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
  if (plan.query_quantizer)
    metadata["tqlab.roundtrip.q"] = plan.query_quantizer->spec();
  else
    metadata.erase("tqlab.roundtrip.q");  // a second roundtrip must not inherit the first one's
  if (plan.engine.empty()) {
    metadata.erase("tqlab.roundtrip.engine");
  } else {
    metadata["tqlab.roundtrip.engine"] = plan.engine;
  }
  metadata["tqlab.roundtrip.seed"] = std::to_string(options.seed);
  metadata["tqlab.roundtrip.layout"] = plan.layout;
  return metadata;
}

std::vector<TensorToWrite> roundtrip_output_tensors(const RoundtripPlan& plan) {
  std::vector<TensorToWrite> tensors;
  for (const TensorView& tensor : plan.file->tensors())
    tensors.push_back({tensor.name, tensor.dtype, tensor.shape, {}});
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

std::int64_t slab_base(const KvLayout& axes, const std::vector<std::int64_t>& strides, int seq, int head) {
  const auto stride = [&](int axis) { return axis < 0 ? 0 : strides[static_cast<std::size_t>(axis)]; };
  return seq * stride(axes.seq_axis) + head * stride(axes.head_axis);
}

bool slab_is_contiguous(const KvLayout& axes, const std::vector<std::int64_t>& strides, int dim) {
  return strides[static_cast<std::size_t>(axes.dim_axis)] == 1 &&
         strides[static_cast<std::size_t>(axes.token_axis)] == dim;
}

}  // namespace tqlab
