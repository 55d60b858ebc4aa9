// tqlab roundtrip IN --k SPEC --v SPEC [--q SPEC] -o OUT: writes the
// fake-quantized tensors (src/roundtrip/roundtrip.h) and prints, per tensor, the
// bits per value and the relative MSE.
#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text.h"
#include "kv/kv_dump.h"
#include "roundtrip/roundtrip.h"

namespace tqlab::cli {
namespace {

struct RoundtripCommandOptions {
  std::string input;
  std::string output;
  std::string layers = "all";
  bool quiet = false;
  bool fsync = false;
  RoundtripOptions roundtrip;
};

void print_table(const RoundtripReport& report) {
  std::size_t name_width = 4;
  std::size_t spec_width = 4;
  std::vector<std::string> names;
  for (const RoundtripTensorResult& tensor : report.tensors) {
    names.push_back(printable(tensor.name));
    name_width = std::max(name_width, names.back().size());
    spec_width = std::max(spec_width, tensor.spec.size());
  }
  fmt::print("{:<{}}  {:<5}  {:<{}}  {:<7}  {:<20}  {:>10}  {:>12}\n", "name", name_width, "role", "spec",
             spec_width, "dtype", "shape", "bits/value", "relative MSE");
  for (std::size_t i = 0; i < report.tensors.size(); ++i) {
    const RoundtripTensorResult& tensor = report.tensors[i];
    fmt::print("{:<{}}  {:<5}  {:<{}}  {:<7}  {:<20}  {:>10.6g}  {:>12.6g}\n", names[i], name_width,
               role_name(tensor.role), tensor.spec, spec_width, dtype_name(tensor.dtype),
               fmt::format("[{}]", fmt::join(tensor.shape, ", ")), tensor.bits_per_value(), tensor.relative_mse());
  }
}

int run_roundtrip_command(RoundtripCommandOptions& options) {
  options.roundtrip.layers = parse_layer_list(options.layers);
  options.roundtrip.durability = options.fsync ? Durability::on_disk : Durability::page_cache;
  guard_output("roundtrip", "-o", options.output, {{options.input, "the input"}});
  ProgressLine progress("roundtrip", !options.quiet);
  options.roundtrip.on_progress = [&](std::size_t done, std::size_t total, int layer) {
    progress.update(done, total, fmt::format("layer {}", layer));
  };
  const RoundtripReport report = run_roundtrip(options.input, options.output, options.roundtrip);
  progress.finish();
  print_table(report);
  if (options.quiet) return kExitOk;
  log::info("wrote {}: {} tensors fake-quantized, {} copied unchanged (layout \"{}\", seed {})", options.output,
            report.tensors.size(), report.copied_tensors, report.layout, options.roundtrip.seed);
  return kExitOk;
}

}  // namespace

void setup_roundtrip(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<RoundtripCommandOptions>();
  RoundtripOptions& roundtrip = options->roundtrip;
  roundtrip.threads = 0;
  auto* command = app.add_subcommand(
      "roundtrip", command_description(
                       "Write a KV dump fake-quantized: same names, shapes and dtypes",
                       "Every other tensor is copied bit for bit; prints bits per value and relative MSE per tensor.",
                       "tqlab-roundtrip"));
  command->add_option("input", options->input, "Input tensor file (.safetensors, .npz)")->required();
  command->add_option("--k", roundtrip.key_spec, "Quantizer spec for the keys, e.g. tq:b=3")->required();
  command->add_option("--v", roundtrip.value_spec, "Quantizer spec for the values, e.g. tq:b=3")->required();
  command->add_option("--engine", roundtrip.engine,
                      "Keys and values through ENGINE's cache (llama.cpp[:rot=off]: its types as --k/--v)");
  command->add_option("--q", roundtrip.query_spec,
                      "Quantizer spec for the queries (default: queries are copied unchanged)");
  add_output_option(*command, options->output,
                    "Output file, format by extension: .safetensors (keeps the metadata and records the "
                    "specs and seed) or .npz; not .npy, which holds one tensor (a dump has several)")
      ->required();
  command->add_option("--keys", roundtrip.keys, "Name template of the key tensors")->capture_default_str();
  command->add_option("--values", roundtrip.values, "Name template of the value tensors")->capture_default_str();
  command->add_option("--queries", roundtrip.queries, "Name template of the query tensors (used with --q)")
      ->capture_default_str();
  command->add_option("--layout", roundtrip.layout,
                      "Axes of the K/V/Q tensors, e.g. \"seq head token dim\" (default: the file's 'layout' "
                      "metadata, else \"head token dim\")");
  command->add_option("--layers", options->layers, "Layers to quantize: all, or e.g. 0,2,5-7 (others are copied)")
      ->capture_default_str();
  add_seed_option(*command, roundtrip.seed, "Seed of every rotation and projection");
  add_threads_option(*command, roundtrip.threads);
  add_quiet_flag(*command, options->quiet);
  command->add_flag("--fsync", options->fsync,
                    "Make the output durable (fsync) before it gets its name. Without it the output is renamed\n"
                    "into place complete, as cp leaves a copy: no process ever sees a partial file, but a power\n"
                    "loss within the kernel's writeback delay may; rerun then (the output is deterministic)");
  command->add_flag("--bf16", roundtrip.raw16_as_bf16,
                    "Read npy '<u2' (otherwise u16) and '|V2' as bfloat16 bits (.npz output writes them as '<u2')");
  command->callback([options, &exit_code] { exit_code = run_roundtrip_command(*options); });
}

}  // namespace tqlab::cli
