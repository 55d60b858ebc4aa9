// tqlab ppl --model DIR --tokens FILE [--k SPEC --v SPEC ...]: the model's
// perplexity over the tokens with an exact KV cache (the base) and with the
// fake-quantized one, the KL divergence between their predictions, as
// llama.cpp's perplexity prints them (src/model/end_to_end.h), and one
// tqlab.sweep/1 document with the run.
#include <chrono>
#include <filesystem>
#include <future>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/sha256.h"
#include "model/checkpoint.h"
#include "model/e2e_results.h"
#include "model/end_to_end.h"
#include "model/kv_cache_plan.h"
#include "model/token_file.h"

namespace tqlab::cli {
namespace {

struct PplCommandOptions {
  std::string model;
  std::string tokens;
  int ctx = 512;
  int chunks = 0;
  std::string score = "second-half";
  bool bos = false;
  std::string k, v;
  int window = 0;
  std::string window_mode = "recent";
  int sink = 0;
  std::string seeds = "0";
  int threads = 0;
  std::string output;
  bool quiet = false;
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// "3.7084 +/- 0.1787"; the error without a sign whatever the value's format.
std::string plus_minus(double value, const std::optional<double>& se, const char* format,
                       const char* se_format = nullptr) {
  const std::string number = fmt::format(fmt::runtime(format), value);
  return se ? number + " +/- " + fmt::format(fmt::runtime(se_format ? se_format : format), *se) : number;
}

void print_run(const E2eRun& run) {
  std::map<std::string, E2eMetricSummary> m;
  for (E2eMetricSummary& summary : summarize_seeds(run.results)) m[summary.name] = std::move(summary);
  const auto& ppl = m.at("e2e_ppl");
  const auto& delta = m.at("e2e_ppl_delta_pct");
  const auto& ratio = m.at("e2e_ln_ppl_ratio");
  const auto& kld = m.at("e2e_kld");
  const auto& top = m.at("e2e_top1");
  const auto& dp = m.at("e2e_dp");
  const auto& rms = m.at("e2e_dp_rms");
  fmt::print("k={} v={} window={} sink={} (seed{} {}):\n", run.k, run.v, run.window, run.sink,
             run.seeds.size() > 1 ? "s" : "", fmt::join(run.seeds, ","));
  fmt::print("  PPL = {}\n", plus_minus(ppl.mean, ppl.se, "{:.4f}"));
  fmt::print("  PPL change = {} %   ln(PPL/PPL_base) = {}\n", plus_minus(delta.mean, delta.se, "{:+.3f}", "{:.3f}"),
             plus_minus(ratio.mean, ratio.se, "{:.5f}"));
  fmt::print("  KLD = {}   median {:.6f}  p95 {:.6f}  p99 {:.6f}  max {:.6f}\n", plus_minus(kld.mean, kld.se, "{:.6f}"),
             m.at("e2e_kld_median").mean, m.at("e2e_kld_p95").mean, m.at("e2e_kld_p99").mean, m.at("e2e_kld_max").mean);
  const auto percent = [](const std::optional<double>& se) {
    return se ? std::optional<double>(100 * *se) : std::nullopt;
  };
  fmt::print("  same top-1 = {} %   mean dp = {} %   RMS dp = {} %\n",
             plus_minus(100 * top.mean, percent(top.se), "{:.3f}"), plus_minus(100 * dp.mean, percent(dp.se), "{:.3f}"),
             plus_minus(100 * rms.mean, percent(rms.se), "{:.3f}"));
  if (run.seeds.size() > 1) {
    fmt::print("  over seeds: PPL std {:.4f}, KLD std {:.6f}\n", ppl.std.value_or(0), kld.std.value_or(0));
  }
}

int run_ppl_command(const PplCommandOptions& options) {
  const auto start = Clock::now();
  if (options.threads < 0) fail("ppl: --threads {} is negative; give a count, or 0 for every core", options.threads);
  if (options.window < 0) fail("ppl: --window {} is negative", options.window);
  if (options.sink < 0) fail("ppl: --sink {} is negative", options.sink);
  const std::vector<std::uint64_t> seeds = parse_seed_list(options.seeds, "ppl");
  std::optional<AtomicFileWriter> writer;
  if (!options.output.empty()) {
    const std::filesystem::path folder = std::filesystem::path(options.output).parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder)) {
      fail("ppl: the output folder '{}' does not exist (-o '{}')", folder.string(), options.output);
    }
    writer.emplace(options.output);  // proves the folder writable before any compute
  }

  const auto checkpoint = Checkpoint::open(options.model);
  const ModelConfig& config = checkpoint->config();
  const Transformer model(*checkpoint);
  TokenIds tokens = read_token_ids(options.tokens, config.vocab_size, "--tokens");
  if (!options.output.empty() && same_file(options.output, tokens.path)) {
    fail("ppl: the output '{}' is the token file", options.output);
  }
  auto tokens_digest = std::async(std::launch::async, [path = tokens.path] { return file_sha256(path); });

  EndToEndOptions e2e;
  e2e.ctx = options.ctx;
  e2e.chunks = options.chunks;
  e2e.scoring = options.score == "all" ? Scoring::all : Scoring::second_half;
  e2e.bos = options.bos;
  e2e.threads = options.threads;
  const WindowMode mode = options.window_mode == "tail" ? WindowMode::tail : WindowMode::recent;
  // Without --k/--v the cache is fp32: the exact cache through the same hook (KLD 0, a check of the path).
  LayeredSpec k{options.k.empty() ? "fp32" : options.k, {}, {}, "--k"};
  LayeredSpec v{options.v.empty() ? "fp32" : options.v, {}, {}, "--v"};
  KvCachePlan plan = plan_kv_cache(config, k, v, ExactTokens{options.sink, options.window, mode});

  const int passes = 1 + static_cast<int>(seeds.size());
  ProgressLine progress("ppl", !options.quiet);
  int pass = 0;
  auto pass_start = Clock::now();
  e2e.on_chunk = [&](int done, int total, int ctx) {
    const double rate = done * static_cast<double>(ctx) / std::max(1e-9, seconds_since(pass_start));
    progress.update(static_cast<std::size_t>(pass * total + done), static_cast<std::size_t>(passes * total),
                    fmt::format("{} chunk {}/{}, {:.0f} tokens/s", pass == 0 ? "base" : "run", done, total, rate));
  };
  EndToEndSession session(model, tokens.ids, e2e, tokens.path);
  const double base_seconds = seconds_since(start);

  E2eRun run;
  run.k = plan.k;
  run.v = plan.v;
  run.window = options.window;
  run.sink = options.sink;
  run.seeds = seeds;
  run.origin = "--k/--v";
  for (std::uint64_t seed : seeds) {
    ++pass;
    pass_start = Clock::now();
    plan.cache.seed = seed;
    run.results.push_back(session.run(plan.cache));
  }
  progress.finish();

  const BaseResult& base = session.base();
  fmt::print("model '{}' ({}, {} layers, {}), {} chunks of {} tokens, {} scoring{}: {} predictions scored\n",
             options.model, config.architecture, config.layers, checkpoint->weight_dtype(), session.chunks(),
             session.ctx(), scoring_name(e2e.scoring), e2e.bos ? ", BOS first" : "", session.scored_tokens());
  fmt::print("base (exact cache):\n  PPL = {}\n",
             plus_minus(base.perplexity.value, base.perplexity.standard_error, "{:.4f}"));
  print_run(run);

  if (writer) {
    E2eDocumentInput document;
    document.model = model_identity(*checkpoint, options.model);
    document.checkpoint = checkpoint.get();
    document.tokens_as_given = options.tokens;
    document.tokens = std::move(tokens);
    document.tokens_sha256 = tokens_digest.get();
    document.session = &session;
    document.options = e2e;
    document.window_mode = mode;
    document.runs.push_back(std::move(run));
    document.total_seconds = seconds_since(start);
    document.base_seconds = base_seconds;
    document.threads = resolve_thread_count(options.threads);
    writer->write(e2e_results_json(document).dump(1) + "\n");
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
  command->add_option("--model", options->model, "Hugging Face checkpoint folder (config.json, model.safetensors)")
      ->required();
  command->add_option("--tokens", options->tokens, "Token ids: FILE.npy (1-D integers) or FILE.safetensors:NAME")
      ->required();
  command->add_option("--ctx", options->ctx, "Tokens per chunk")->capture_default_str();
  command->add_option("--chunks", options->chunks, "Chunks to run (0: every whole chunk of the tokens)")
      ->capture_default_str();
  command->add_option("--score", options->score, "Predictions scored per chunk")
      ->check(CLI::IsMember({"second-half", "all"}))
      ->capture_default_str();
  command->add_flag("--bos", options->bos, "Replace each chunk's first token by the config's bos_token_id");
  command->add_option("--k", options->k, "Quantizer spec for the cached keys (default: fp32, exact)");
  command->add_option("--v", options->v, "Quantizer spec for the cached values (default: fp32, exact)");
  command->add_option("--window", options->window, "Recent tokens kept exact")->capture_default_str();
  command->add_option("--window-mode", options->window_mode, "Which tokens the window keeps")
      ->check(CLI::IsMember({"recent", "tail"}))
      ->capture_default_str();
  command->add_option("--sink", options->sink, "First tokens of each chunk kept exact")->capture_default_str();
  command->add_option("--seeds", options->seeds, "Rotation seeds, e.g. 0,1,2")->capture_default_str();
  command->add_option("--threads", options->threads, "Worker threads (0: every core this process may use)")
      ->capture_default_str();
  command->add_option("-o,--output", options->output, "Results document (tqlab.sweep/1 JSON)");
  command->add_flag("--quiet", options->quiet, "No progress line and no informational messages");
  command->callback([options, &exit_code] { exit_code = run_ppl_command(*options); });
}

}  // namespace tqlab::cli
