// tqlab dump --model DIR --tokens FILE -o kv.safetensors: the post-RoPE
// queries, keys and values of the model's own forward pass over the tokens,
// written as a KV dump the other commands read with their defaults
// (src/model/kv_dump_writer.h).
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
  ModelFlags model;
  std::string output;
  std::string layers = "all";
  std::string dtype = "f16";
  bool logits = false;
  int threads = 0;
  bool quiet = false;
};

int run_dump_command(const DumpCommandOptions& options) {
  const TokenSourceFlags& source = options.model.source;
  check_token_source_flags(source, "dump");
  if (!options.output.ends_with(".safetensors")) {
    fail("dump: -o '{}': a KV dump is written as .safetensors (it carries the layout and name templates as metadata)",
         options.output);
  }
  guard_output("dump", "-o", options.output, options.model.inputs());
  const auto weights = open_weight_source(options.model.model);
  const Transformer model(*weights);
  const ModelTokens tokens =
      source.text.empty()
          ? read_model_tokens(source.tokens, model.config(), "--tokens")
          : tokenize_model_text(source.text, source.tokenizer.empty() ? options.model.model : source.tokenizer,
                                source.add_special_choice(), model.config(), "--text",
                                ids_for_chunks(options.model.ctx, options.model.chunks));

  KvDumpWriteOptions write;
  write.ctx = options.model.ctx;
  write.chunks = options.model.chunks;
  write.bos = options.model.bos;
  write.layers = parse_layer_list(options.layers);
  write.dtype = *parse_dtype(options.dtype);
  write.logits = options.logits;
  write.threads = options.threads;
  write.model_path = options.model.model;
  write.tokens_path = source.text.empty() ? source.tokens : source.text;
  write.tokens_sha256 = tokens.sha256;
  write.tokenizer_sha256 = tokens.tokenizer_sha256;
  if (!source.text.empty()) write.names.tokens = "--text";
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
  add_model_flags(*command, options->model);
  add_output_option(*command, options->output, "The dump (.safetensors)")->required();
  command->add_option("--layers", options->layers, "Layers to write: all, or e.g. 0,2,5-7")->capture_default_str();
  command->add_option("--dtype", options->dtype, "Element type of q, k and v")
      ->check(CLI::IsMember({"f16", "bf16", "f32"}))
      ->capture_default_str();
  command->add_flag("--logits", options->logits, "Also write the logits [chunks, ctx, vocab] as F32");
  add_threads_option(*command, options->threads);
  add_quiet_flag(*command, options->quiet);
  command->callback([options, &exit_code] { exit_code = run_dump_command(*options); });
}

}  // namespace tqlab::cli
