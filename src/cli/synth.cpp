// tqlab synth -o FILE: KV-like synthetic tensors (see src/kv/synthetic_kv.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "kv/synthetic_kv.h"

namespace tqlab::cli {
namespace {

struct SynthCommandOptions {
  SyntheticKvOptions kv;
  std::string output;
  std::string dtype = "f16";
  std::string format;
};

int run_synth(SynthCommandOptions& options) {
  const auto dtype = parse_dtype(options.dtype);
  if (!dtype || *dtype == DType::raw16) {
    fail("synth: --dtype {} is not allowed, expected f16, bf16, f32 or f64", options.dtype);
  }
  options.kv.dtype = *dtype;
  std::string path = options.output;
  if (!options.format.empty()) {
    const std::string extension = "." + options.format;
    if (!path.ends_with(extension)) {
      fail("synth: --format {} but the output '{}' does not end in {}", options.format, path, extension);
    }
  }
  guard_output("synth", "-o", path, {});
  write_synthetic_kv(path, options.kv);
  const SyntheticKvOptions& kv = options.kv;
  log::info("wrote {}: {} layers x (q {} heads, k/v {} heads) x {} seqs x {} tokens x dim {}, {}, seed {}", path,
            kv.layers, kv.q_heads, kv.kv_heads, kv.seqs, kv.tokens, kv.dim, options.dtype, kv.seed);
  return kExitOk;
}

}  // namespace

void setup_synth(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<SynthCommandOptions>();
  auto* command = app.add_subcommand(
      "synth", command_description(
                   "Write KV-like synthetic tensors for tests and demos",
                   "Outlier key channels in RoPE pairs, key norms far above value norms, peaked attention; seeded.",
                   "tqlab-synth"));
  add_output_option(*command, options->output, "Output file (.safetensors or .npz)")->required();
  // Each count's range is the synthesizer's to check (kv/synthetic_kv.h), with its own message.
  const auto count = [&](const char* name, int& value, const char* description) {
    decimal(command->add_option(name, value, description), kMinIntOption, kMaxIntOption)->capture_default_str();
  };
  count("--layers", options->kv.layers, "Layers");
  count("--kv-heads", options->kv.kv_heads, "Key/value heads");
  count("--q-heads", options->kv.q_heads, "Query heads (a multiple of --kv-heads)");
  count("--tokens", options->kv.tokens, "Tokens per sequence");
  count("--seqs", options->kv.seqs, "Independent sequences");
  count("--dim", options->kv.dim, "Head dim (even)");
  command->add_option("--dtype", options->dtype, "Stored type: f16, bf16, f32, f64")->capture_default_str();
  command->add_option("--format", options->format, "safetensors or npz (default: from the output's extension)")
      ->check(CLI::IsMember({"safetensors", "npz"}));
  add_seed_option(*command, options->kv.seed, "Random seed");
  command->callback([options, &exit_code] { exit_code = run_synth(*options); });
}

}  // namespace tqlab::cli
