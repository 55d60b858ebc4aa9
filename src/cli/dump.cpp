// tqlab dump --model DIR --tokens FILE -o kv.safetensors: the post-RoPE
// queries, keys and values of the model's own forward pass over the tokens,
// written as a KV dump the other commands read with their defaults
// (src/model/kv_dump_writer.h).
#include <filesystem>

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/sha256.h"
#include "kv/kv_dump.h"
#include "model/kv_dump_writer.h"
#include "model/model_tokens.h"
#include "model/weight_source.h"

namespace tqlab::cli {
namespace {

struct DumpCommandOptions {
  std::string model;
  TokenSourceFlags source;
  std::string output;
  int ctx = 512;
  int chunks = 0;
  std::string layers = "all";
  std::string dtype = "f16";
  bool bos = false;
  bool logits = false;
  int threads = 0;
  bool quiet = false;
};

int run_dump_command(const DumpCommandOptions& options) {
  if (options.threads < 0) fail("dump: --threads {} is negative; give a count, or 0 for every core", options.threads);
  check_token_source_flags(options.source, "dump");
  if (!options.output.ends_with(".safetensors")) {
    fail("dump: -o '{}': a KV dump is written as .safetensors (it carries the layout and name templates as metadata)",
         options.output);
  }
  const std::filesystem::path folder = std::filesystem::path(options.output).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder)) {
    fail("dump: the output folder '{}' does not exist (-o '{}')", folder.string(), options.output);
  }
  const auto source = open_weight_source(options.model);
  for (const SourceFile& file : source->files()) {
    if (same_file(options.output, file.path)) fail("dump: the output '{}' is the model's weight file", options.output);
  }
  const Transformer model(*source);
  const ModelTokens tokens =
      options.source.text.empty()
          ? read_model_tokens(options.source.tokens, model.config(), "--tokens")
          : tokenize_model_text(options.source.text,
                                options.source.tokenizer.empty() ? options.model : options.source.tokenizer,
                                options.source.add_special_choice(), model.config(), "--text");
  if (same_file(options.output, tokens.path)) {
    fail("dump: the output '{}' is the {} file", options.output, options.source.text.empty() ? "token" : "text");
  }

  KvDumpWriteOptions write;
  write.ctx = options.ctx;
  write.chunks = options.chunks;
  write.bos = options.bos;
  write.layers = parse_layer_list(options.layers);
  write.dtype = *parse_dtype(options.dtype);
  write.logits = options.logits;
  write.threads = options.threads;
  write.model_path = options.model;
  write.tokens_path = options.source.text.empty() ? options.source.tokens : options.source.text;
  write.tokens_sha256 = tokens.sha256;
  write.tokenizer_sha256 = tokens.tokenizer_sha256;
  if (!options.source.text.empty()) write.names.tokens = "--text";
  ProgressLine progress("dump", !options.quiet);
  write.on_chunk = [&](int done, int total) {
    progress.update(static_cast<std::size_t>(done), static_cast<std::size_t>(total), "chunks");
  };
  const KvDumpSummary summary = write_model_kv_dump(model, tokens.ids, options.output, write);
  progress.finish();
  if (!options.quiet) {
    log::info("wrote {}: {} layers, {} sequences of {} tokens, {} q heads, {} kv heads, head dim {}, {}{}",
              options.output, summary.layers.size(), summary.chunks, summary.ctx, model.config().q_heads,
              model.config().kv_heads, model.config().head_dim, options.dtype, options.logits ? ", with logits" : "");
  }
  return kExitOk;
}

}  // namespace

void setup_dump(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DumpCommandOptions>();
  auto* command = app.add_subcommand(
      "dump", command_description("Write a KV dump from a checkpoint's own forward pass, without PyTorch",
                                  "Post-RoPE q, k and v of every layer, read by inspect, sweep and roundtrip as it is.",
                                  "tqlab-dump"));
  command->add_option("--model", options->model, "Hugging Face checkpoint folder (config.json, model.safetensors) or GGUF file")
      ->required();
  add_token_source_flags(*command, options->source);
  command->add_option("-o,--output", options->output, "The dump (.safetensors)")->required();
  command->add_option("--ctx", options->ctx, "Tokens per chunk (one sequence of the dump each)")->capture_default_str();
  command->add_option("--chunks", options->chunks, "Chunks to run (0: every whole chunk of the tokens)")
      ->capture_default_str();
  command->add_option("--layers", options->layers, "Layers to write: all, or e.g. 0,2,5-7")->capture_default_str();
  command->add_option("--dtype", options->dtype, "Element type of q, k and v")
      ->check(CLI::IsMember({"f16", "bf16", "f32"}))
      ->capture_default_str();
  command->add_flag("--bos", options->bos, "Replace each chunk's first token by the config's bos_token_id");
  command->add_flag("--logits", options->logits, "Also write the logits [chunks, ctx, vocab] as F32");
  command->add_option("--threads", options->threads, "Worker threads (0: every core this process may use)")
      ->capture_default_str();
  command->add_flag("--quiet", options->quiet, "No progress line and no informational messages");
  command->callback([options, &exit_code] { exit_code = run_dump_command(*options); });
}

}  // namespace tqlab::cli
