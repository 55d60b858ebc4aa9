// tqlab dump --model DIR --tokens FILE -o kv.safetensors: the post-RoPE
// queries, keys and values of the model's own forward pass over the tokens,
// written as a KV dump the other commands read with their defaults
// (src/model/kv_dump_writer.h). With --k/--v, --engine or --preset the forward
// runs under that cache as tqlab ppl's runs do, and the file's metadata says so.
#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include "cli/cache_flags.h"
#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/sha256.h"
#include "kv/kv_dump.h"
#include "model/kv_cache_plan.h"
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
  CacheFlags cache;
  std::uint64_t seed = 0;
  int threads = 0;
  bool quiet = false;
};

// --k/--v, --engine, --preset or --prefill: the forward under that cache (ppl's run of the same flags), the
// file's metadata naming it; `plan` stays empty for the exact forward.
void dump_cache(const DumpCommandOptions& options, const ModelConfig& config, std::optional<KvCachePlan>& plan,
                KvDumpWriteOptions& write) {
  const CacheFlags& flags = options.cache;
  const CacheRun run = resolve_cache_flags(flags, options.model.ctx, "fp32");
  if (flags.k.empty() && flags.v.empty() && flags.prefill.empty() && is_default_engine(run.engine)) return;
  plan = plan_kv_cache(config, {run.k, {}, {}, "--k"}, {run.v, {}, {}, "--v"}, {}, run.engine, run.prefill,
                       "--k/--v");
  plan->cache.seed = options.seed;
  write.cache = &plan->cache;
  write.metadata = {{"tqlab.dump.engine", run.engine},       {"tqlab.dump.k", plan->k},
                    {"tqlab.dump.v", plan->v},               {"tqlab.dump.prefill", run.prefill.spelling()},
                    {"tqlab.dump.seed", std::to_string(options.seed)}};
}

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
  std::optional<KvCachePlan> cache;
  dump_cache(options, model.config(), cache, write);
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
  add_cache_flags(*command, options->cache, "none, the exact forward");
  add_seed_option(*command, options->seed, "Rotation seed of the cache's quantizers");
  add_threads_option(*command, options->threads);
  add_quiet_flag(*command, options->quiet);
  command->callback([options, &exit_code] { exit_code = run_dump_command(*options); });
}

}  // namespace tqlab::cli
