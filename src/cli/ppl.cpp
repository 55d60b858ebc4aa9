// tqlab ppl --model DIR --tokens FILE | --text FILE [--k SPEC --v SPEC ...]: the
// model's perplexity over the tokens with an exact KV cache (the base) and with
// the fake-quantized one, the KL divergence between their predictions, as
// llama.cpp's perplexity prints them. It is a sweep of one run with a model block
// and no offline metrics (src/sweep/sweep_model.h), so its document is the
// tqlab.sweep/1 document such a sweep writes.
#include <map>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/cache_flags.h"
#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/engine.h"
#include "sweep/sweep.h"
#include "sweep/sweep_results.h"

namespace tqlab::cli {
namespace {

struct PplCommandOptions {
  ModelFlags model;
  std::string score = "second-half";
  CacheFlags cache;
  int window = 0;
  std::string window_mode = "recent";
  int sink = 0;
  std::string seeds = "0";
  int threads = 0;
  std::string output;
  bool quiet = false;
};

// "3.7084 +/- 0.1787"; the error without a sign whatever the value's format.
std::string plus_minus(double value, const std::optional<double>& se, const char* format,
                       const char* se_format = nullptr) {
  const std::string number = fmt::format(fmt::runtime(format), value);
  return se ? number + " +/- " + fmt::format(fmt::runtime(se_format ? se_format : format), *se) : number;
}

const MetricSummary& metric(const RunResult& result, const std::string& name) {
  for (const auto& [metric_name, summary] : result.metrics) {
    if (metric_name == name) return summary;
  }
  throw InternalError("ppl: the run has no metric " + name);
}

void print_run(const RunResult& result, const std::vector<std::uint64_t>& seeds) {
  const auto value = [&](const char* name) { return *metric(result, name).mean; };
  const auto se = [&](const char* name) { return metric(result, name).standard_error; };
  const auto percent = [](const std::optional<double>& error) {
    return error ? std::optional<double>(100 * *error) : std::nullopt;
  };
  const PlannedRun& run = *result.run;
  fmt::print("k={} v={} window={} sink={}{}{} (seed{} {}):\n", run.k, run.v, run.window, run.sink,
             is_default_engine(run.engine) ? "" : " engine=" + run.engine,
             prefill_written(run.engine, run.prefill) ? " prefill=" + run.prefill.spelling() : "",
             seeds.size() > 1 ? "s" : "", fmt::join(seeds, ","));
  fmt::print("  PPL = {}\n", plus_minus(value("e2e_ppl"), se("e2e_ppl"), "{:.4f}"));
  fmt::print("  PPL change = {} %   ln(PPL/PPL_base) = {}\n",
             plus_minus(value("e2e_ppl_delta_pct"), se("e2e_ppl_delta_pct"), "{:+.3f}", "{:.3f}"),
             plus_minus(value("e2e_ln_ppl_ratio"), se("e2e_ln_ppl_ratio"), "{:.5f}"));
  fmt::print("  KLD = {}   median {:.6f}  p95 {:.6f}  p99 {:.6f}  max {:.6f}\n",
             plus_minus(value("e2e_kld"), se("e2e_kld"), "{:.6f}"), value("e2e_kld_median"), value("e2e_kld_p95"),
             value("e2e_kld_p99"), value("e2e_kld_max"));
  fmt::print("  same top-1 = {} %   mean dp = {} %   RMS dp = {} %\n",
             plus_minus(100 * value("e2e_top1"), percent(se("e2e_top1")), "{:.3f}"),
             plus_minus(100 * value("e2e_dp"), percent(se("e2e_dp")), "{:.3f}"),
             plus_minus(100 * value("e2e_dp_rms"), percent(se("e2e_dp_rms")), "{:.3f}"));
  if (seeds.size() > 1) {
    fmt::print("  over seeds: PPL std {:.4f}, KLD std {:.6f}\n", metric(result, "e2e_ppl").seed_std.value_or(0),
               metric(result, "e2e_kld").seed_std.value_or(0));
  }
}

// The sweep ppl is: one run, a model block, no offline metric family.
SweepConfig ppl_config(const PplCommandOptions& options) {
  check_token_source_flags(options.model.source, "ppl");
  if (options.window < 0) fail("ppl: --window {} is negative", options.window);
  if (options.sink < 0) fail("ppl: --sink {} is negative", options.sink);
  SweepConfig config;
  config.name = "ppl";
  SweepModelConfig& model = config.model.emplace();
  const ModelFlags& flags = options.model;
  model.path = model.resolved_path = flags.model;
  model.tokens = model.resolved_tokens = flags.source.tokens;
  model.text = model.resolved_text = flags.source.text;
  model.tokenizer = model.resolved_tokenizer = flags.source.tokenizer;
  model.add_special = flags.source.add_special_choice();
  model.ctx = flags.ctx;
  model.chunks = flags.chunks;
  model.score = *parse_scoring(options.score);  // --score accepts only kScoringNames
  model.bos = flags.bos;
  model.from_flags = true;
  // Without --k/--v the cache is the engine's (a vLLM preset's), else fp32: the exact cache through
  // the same hook (KLD 0, a check of the path).
  const CacheRun cache = resolve_cache_flags(options.cache, flags.ctx, "fp32");
  SweepRunConfig& run = config.runs.emplace_back();
  run.engine = cache.engine;
  run.k = LayeredSpec{cache.k, {}, {}, "--k"};
  run.v = LayeredSpec{cache.v, {}, {}, "--v"};
  run.window = options.window;
  run.sink = options.sink;
  run.prefill = cache.prefill;
  run.origin = "--k/--v";
  config.metrics.reconstruction = config.metrics.attention = config.metrics.needle = false;
  config.metrics.attention_options.window_mode = *parse_window_mode(options.window_mode);
  config.seeds = parse_seed_list(options.seeds, "ppl");
  config.out = options.output;
  return config;
}

// What the engine decided for the run that the numbers alone do not show: a default prefill of
// its own, and layers it keeps unquantized whatever the specs (vLLM's boundary layers).
void print_engine_notes(const PplCommandOptions& options, const PlannedRun& run, const ModelConfig& model_config) {
  if (options.cache.prefill.empty() && run.prefill != PrefillRule{}) {
    fmt::print(
        "  prefill={} is engine {}'s default, one prefill of each chunk (vLLM's prompt logprobs):\n"
        "  a TurboQuant preset then reads its own chunk's K/V exact (PPL change 0); --prefill exact C\n"
        "  measures a chunked prefill, --prefill quantized what decoding reads\n",
        run.prefill.spelling(), run.engine);
  }
  const std::vector<int> kept = parse_engine(run.engine, "--engine")->unquantized_layers(model_config.layers);
  if (!kept.empty()) {
    fmt::print("  engine {} keeps layer{} {} of this {}-layer model at {}{}\n", run.engine, kept.size() > 1 ? "s" : "",
               fmt::join(kept, ", "), model_config.layers, Engine::kUnquantizedSpec,
               static_cast<int>(kept.size()) == model_config.layers ? ": no layer's cache is quantized" : "");
  }
}

int run_ppl_command(const PplCommandOptions& options) {
  const SweepConfig config = ppl_config(options);
  std::optional<AtomicFileWriter> writer;
  if (!options.output.empty()) {
    guard_output("ppl", "-o", options.output, options.model.inputs());
    writer.emplace(options.output);
  }

  const SweepPlan plan = plan_sweep(config, PlanOptions{options.threads});
  ProgressLine progress("ppl", !options.quiet);
  SweepOptions sweep_options;
  sweep_options.threads = options.threads;
  sweep_options.on_progress = [&](std::size_t done, std::size_t total, int) {
    progress.update(done, total, "base and runs, chunk by chunk");
  };
  const SweepResults results = run_sweep(plan, sweep_options);
  progress.finish();

  const SweepModel& model = *plan.model;
  const ModelConfig& model_config = model.source->config();
  const EndToEndBase& base = *results.end_to_end;
  fmt::print("model '{}' ({}, {} layers, {}), {} chunks of {} tokens, {} scoring{}: {} predictions scored\n",
             options.model.model, model_config.architecture, model_config.layers, model.source->weight_dtype(),
             model.chunks, model.options.ctx, scoring_name(model.options.scoring),
             model.options.bos ? ", BOS first" : "", base.scored_tokens);
  fmt::print("base (exact cache):\n  PPL = {}\n",
             plus_minus(base.perplexity.value, base.perplexity.standard_error, "{:.4f}"));
  print_run(results.runs.front(), plan.config.seeds);
  print_engine_notes(options, *results.runs.front().run, model_config);

  if (writer) {
    writer->write(sweep_results_json(plan, results, DataIdentity{}).dump(1) + "\n");
    writer->commit();
    if (!options.quiet) log::info("wrote {}", options.output);
  }
  return kExitOk;
}

}  // namespace

void setup_ppl(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<PplCommandOptions>();
  auto* command = app.add_subcommand(
      "ppl", command_description("Perplexity and KL divergence of a model with a quantized KV cache",
                                 "A Hugging Face Llama-family model on the CPU against its exact cache; llama.cpp's "
                                 "statistics.",
                                 "tqlab-ppl"));
  add_model_flags(*command, options->model);
  command->add_option("--score", options->score, "Predictions scored per chunk")
      ->check(CLI::IsMember(kScoringNames.names()))
      ->capture_default_str();
  add_cache_flags(*command, options->cache, "fp32, exact");
  decimal(command->add_option("--window", options->window, "Recent tokens kept exact"), kMinIntOption, kMaxIntOption)
      ->capture_default_str();
  command->add_option("--window-mode", options->window_mode, "Which tokens the window keeps")
      ->check(CLI::IsMember(kWindowModeNames.names()))
      ->capture_default_str();
  decimal(command->add_option("--sink", options->sink, "First tokens of each chunk kept exact"), kMinIntOption,
          kMaxIntOption)
      ->capture_default_str();
  add_seeds_options(*command, options->seeds, "default: 0");
  add_threads_option(*command, options->threads);
  add_output_option(*command, options->output, "Results document (tqlab.sweep/1 JSON)");
  add_quiet_flag(*command, options->quiet);
  command->callback([options, &exit_code] { exit_code = run_ppl_command(*options); });
}

}  // namespace tqlab::cli
