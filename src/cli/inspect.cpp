// tqlab inspect FILE [--json]: every tensor with statistics; per-layer K/V norms.
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "blocks/ggml_type.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "core/text.h"
#include "io/gguf.h"
#include "io/tensor_file.h"
#include "io/tensor_stats.h"
#include "kv/kv_dump.h"

namespace tqlab::cli {
namespace {

struct InspectOptions {
  std::string path;
  bool json = false;
  bool bf16 = false;
  std::string layout;
  int outliers = 4;
};

struct TensorReport {
  const TensorView* tensor;
  TensorStats stats;
};

// The axis holding a vector's channels: from --layout, else the file's
// "layout" metadata, else the last axis (-1).
int channel_axis(const TensorFile& file, const std::string& layout_option) {
  const ResolvedKvLayout resolved = resolve_kv_layout(file, layout_option, "--layout");
  switch (resolved.source) {
    case ResolvedKvLayout::Source::option: return parse_kv_layout(resolved.layout).dim_axis;
    case ResolvedKvLayout::Source::metadata:
      try {
        return parse_kv_layout(resolved.layout).dim_axis;
      } catch (const InputError&) {
        return -1;  // metadata we cannot read is not the user's error
      }
    case ResolvedKvLayout::Source::assumed: break;
  }
  return -1;
}

// A statistic for JSON: integer tensors' min and max exactly (as JSON integers), else the double.
nlohmann::json extreme(const TensorStats& stats, bool minimum) {
  if (!stats.integer) return minimum ? stats.min : stats.max;
  const IntegerRange& range = *stats.integer;
  if (range.is_unsigned) return minimum ? range.unsigned_min : range.unsigned_max;
  return minimum ? range.signed_min : range.signed_max;
}

// Names, metadata and the path go through json_text: nlohmann::json throws on invalid UTF-8.
nlohmann::json to_json(const TensorFile& file, const std::vector<TensorReport>& reports,
                       const std::vector<KvLayerStats>& layers) {
  nlohmann::json out;
  out["schema"] = "tqlab.inspect/1";
  out["path"] = json_text(file.path());
  out["format"] = file.format();
  out["size_bytes"] = std::filesystem::file_size(file.path());
  out["metadata"] = nlohmann::json::object();
  for (const auto& [key, value] : file.metadata()) out["metadata"][json_text(key)] = json_text(value);
  out["tensors"] = nlohmann::json::array();
  for (const TensorReport& report : reports) {
    const TensorStats& s = report.stats;
    out["tensors"].push_back({{"name", json_text(report.tensor->name)},
                              {"dtype", dtype_name(report.tensor->dtype)},
                              {"shape", report.tensor->shape},
                              {"count", s.count},
                              {"nonfinite", s.nonfinite},
                              {"min", extreme(s, true)},
                              {"max", extreme(s, false)},
                              {"mean", s.mean},
                              {"rms", s.rms}});
  }
  out["kv_layers"] = nlohmann::json::array();
  for (const KvLayerStats& layer : layers) {
    nlohmann::json outliers = nlohmann::json::array();
    for (const auto& [channel, rms] : layer.outlier_channels) outliers.push_back({{"channel", channel}, {"rms", rms}});
    out["kv_layers"].push_back({{"layer", layer.names.layer},
                                {"keys", json_text(layer.names.keys)},
                                {"values", json_text(layer.names.values)},
                                {"key_norm_mean", layer.key_norm_mean},
                                {"value_norm_mean", layer.value_norm_mean},
                                {"norm_ratio", layer.norm_ratio},
                                {"median_key_channel_rms", layer.median_key_channel_rms},
                                {"outlier_channels", outliers}});
  }
  return out;
}

// A min/max cell: integers exactly, floats to 4 significant digits.
std::string extreme_cell(const TensorStats& stats, bool minimum) {
  if (stats.integer) return minimum ? stats.integer->min_text() : stats.integer->max_text();
  return fmt::format("{:.4g}", minimum ? stats.min : stats.max);
}

void print_table(const TensorFile& file, const std::vector<TensorReport>& reports,
                 const std::vector<KvLayerStats>& layers) {
  fmt::print("{} ({}, {} tensors)\n", printable(file.path(), kMaxMessageBytes), file.format(), reports.size());
  for (const auto& [key, value] : file.metadata()) fmt::print("  {}: {}\n", printable(key), printable(value, 240));
  std::vector<std::string> names;
  std::size_t name_width = 4;
  for (const TensorReport& report : reports) {
    names.push_back(printable(report.tensor->name));
    name_width = std::max(name_width, names.back().size());
  }
  fmt::print("\n{:<{}}  {:<7}  {:<20}  {:>10}  {:>9}  {:>11}  {:>11}  {:>11}  {:>11}\n", "name", name_width, "dtype",
             "shape", "count", "nonfinite", "min", "max", "mean", "rms");
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const TensorReport& report = reports[i];
    const TensorStats& s = report.stats;
    fmt::print("{:<{}}  {:<7}  {:<20}  {:>10}  {:>9}  {:>11}  {:>11}  {:>11.4g}  {:>11.4g}\n", names[i], name_width,
               dtype_name(report.tensor->dtype), report.tensor->shape_string(), s.count, s.nonfinite,
               extreme_cell(s, true), extreme_cell(s, false), s.mean, s.rms);
  }
  if (layers.empty()) return;
  fmt::print("\nK/V pairs: per layer mean key norm / mean value norm, and the key channels of largest RMS\n");
  fmt::print("{:>5}  {:>12}  {:>12}  {:>8}  {:>10}  {}\n", "layer", "|k| mean", "|v| mean", "|k|/|v|",
             "median rms", "outlier channels (rms)");
  for (const KvLayerStats& layer : layers) {
    std::string outliers;
    for (const auto& [channel, rms] : layer.outlier_channels) outliers += fmt::format("{}({:.3g}) ", channel, rms);
    fmt::print("{:>5}  {:>12.4g}  {:>12.4g}  {:>8.2f}  {:>10.4g}  {}\n", layer.names.layer, layer.key_norm_mean,
               layer.value_norm_mean, layer.norm_ratio, layer.median_key_channel_rms, outliers);
  }
}

// A GGUF file: its metadata (arrays summarised) and every tensor's ggml type, shape and bytes. Quantized
// tensors are not decoded here, so there are no value statistics.
int inspect_gguf(const GgufFile& file, bool json) {
  if (json) {
    nlohmann::json out;
    out["schema"] = "tqlab.inspect/1";
    out["path"] = json_text(file.path());
    out["format"] = "gguf";
    out["size_bytes"] = file.file_size();
    out["gguf_version"] = file.version();
    out["alignment"] = file.alignment();
    out["metadata"] = nlohmann::json::object();
    for (const GgufMetadata& entry : file.metadata()) {
      const std::string type = entry.value.is_array() ? "array" : std::string(gguf_type_name(entry.value.type));
      out["metadata"][json_text(entry.key)] = {{"type", type}, {"value", json_text(describe_gguf_value(entry.value))}};
    }
    out["tensors"] = nlohmann::json::array();
    for (const GgufTensor& tensor : file.tensors()) {
      out["tensors"].push_back({{"name", json_text(tensor.name)}, {"dtype", tensor.traits->name},
                                {"shape", tensor.shape()}, {"bytes", tensor.byte_size}});
    }
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return kExitOk;
  }
  fmt::print("{} (gguf v{}, {} tensors, {} metadata keys, alignment {})\n", printable(file.path(), kMaxMessageBytes),
             file.version(), file.tensors().size(), file.metadata().size(), file.alignment());
  for (const GgufMetadata& entry : file.metadata()) {
    fmt::print("  {}: {}\n", printable(entry.key), printable(describe_gguf_value(entry.value), 240));
  }
  std::size_t name_width = 4;
  for (const GgufTensor& tensor : file.tensors()) name_width = std::max(name_width, printable(tensor.name).size());
  fmt::print("\n{:<{}}  {:<7}  {:<20}  {:>12}\n", "name", name_width, "type", "shape", "bytes");
  for (const GgufTensor& tensor : file.tensors()) {
    fmt::print("{:<{}}  {:<7}  {:<20}  {:>12}\n", printable(tensor.name), name_width, tensor.traits->name,
               tensor.shape_string(), tensor.byte_size);
  }
  return kExitOk;
}

bool is_gguf_file(const std::string& path) {
  std::byte magic[4] = {};
  const MappedFile file(path);
  if (file.size() < sizeof magic) return false;
  file.read(0, magic);
  return looks_like_gguf(magic, sizeof magic);
}

int run_inspect(const InspectOptions& options) {
  if (is_gguf_file(options.path)) return inspect_gguf(*GgufFile::open(options.path), options.json);
  OpenOptions open_options;
  open_options.raw16_as_bf16 = options.bf16;
  const auto file = TensorFile::open(options.path, open_options);
  std::vector<TensorReport> reports;
  for (const TensorView& tensor : file->tensors()) {
    // The library's own message for raw16 cannot name the file, and --bf16 is this command's answer.
    if (tensor.dtype == DType::raw16) {
      fail("'{}': tensor '{}' holds raw 2-byte values (npy '|V2'), whose meaning the file does not say; pass "
           "--bf16 to read them as bfloat16",
           file->path(), printable(tensor.name));
    }
    reports.push_back({&tensor, compute_tensor_stats(tensor)});
    file->release(tensor);
  }
  const int axis = channel_axis(*file, options.layout);
  std::vector<KvLayerStats> layers;
  for (const KvTensorNames& names : find_kv_tensor_names(*file)) {
    layers.push_back(measure_kv_layer(*file, names, axis, options.outliers));
  }
  if (options.json) {
    // Every string went through json_text; `replace` only guards against one that did not.
    fmt::print("{}\n", to_json(*file, reports, layers).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    print_table(*file, reports, layers);
  }
  int exit_code = kExitOk;
  for (const TensorReport& report : reports) {
    if (report.stats.nonfinite == 0) continue;
    log::error("'{}': tensor '{}' holds {} non-finite values (NaN/Inf) of {}", file->path(),
               printable(report.tensor->name),
               report.stats.nonfinite, report.stats.count);
    exit_code = kExitInputError;
  }
  return exit_code;
}

}  // namespace

void setup_inspect(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<InspectOptions>();
  auto* command = app.add_subcommand(
      "inspect",
      command_description(
          "List a file's tensors: dtype, shape, NaN/Inf, min/max/mean/rms (GGUF: also metadata and bytes)",
          "For K/V pairs, per layer the norm ratio and outlier key channels. Exit 2 on bad files or NaN/Inf.",
          "tqlab-inspect"));
  command->add_option("file", options->path, "Tensor file (.npy, .npz, .safetensors or .gguf)")->required();
  command->add_flag("--json", options->json, "Print JSON (schema tqlab.inspect/1) instead of a table");
  command->add_flag("--bf16", options->bf16,
                    "Read npy '<u2' (otherwise u16) and '|V2' (otherwise refused) as bfloat16 bits");
  command->add_option("--layout", options->layout,
                      "Axes of the K/V tensors, e.g. \"seq head token dim\" (default: the file's 'layout' "
                      "metadata, else the last axis is the head dim)");
  decimal(command->add_option("--outliers", options->outliers, "How many outlier key channels to list per layer"), 0,
          4096)
      ->default_val(4);
  command->callback([options, &exit_code] { exit_code = run_inspect(*options); });
}

}  // namespace tqlab::cli
