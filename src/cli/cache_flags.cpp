#include "cli/cache_flags.h"

#include <memory>

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tqlab::cli {

void add_cache_flags(CLI::App& command, CacheFlags& flags, const std::string& unset) {
  command.add_option("--k", flags.k, fmt::format("Quantizer spec for the cached keys (default: {})", unset));
  command.add_option("--v", flags.v, fmt::format("Quantizer spec for the cached values (default: {})", unset));
  command
      .add_option("--engine", flags.engine,
                  "Whose cache semantics: tqlab, llama.cpp, llama.cpp:rot=off or vllm (docs/ENGINES.md)")
      ->capture_default_str();
  command.add_option("--preset", flags.preset,
                     "vLLM's --kv-cache-dtype preset with --engine vllm (tqlab list names them): its K, V, "
                     "unquantized layers and prefill");
  command
      .add_option("--prefill", flags.prefill,
                  "Which tokens read the quantized cache: quantized, or exact C (pieces of C tokens read their "
                  "own K/V exact; vllm: per vLLM's rule). Default: quantized; vllm: exact CTX, one prefill")
      ->expected(1, 2);
}

CacheRun resolve_cache_flags(const CacheFlags& flags, int ctx, const std::string& unset_spec) {
  CacheRun run;
  run.engine = engine_with_preset(canonical_engine(flags.engine, "--engine"), flags.preset, "--preset");
  const std::unique_ptr<Engine> engine = parse_engine(run.engine, "--engine");
  const EngineSpecs defined = engine->defined_specs();
  const auto spec = [&](const std::string& given, const std::string& engine_spec) {
    return !given.empty() ? given : !engine_spec.empty() ? engine_spec : unset_spec;
  };
  run.k = spec(flags.k, defined.k);
  run.v = spec(flags.v, defined.v);
  run.prefill_given = !flags.prefill.empty();
  run.prefill = run.prefill_given ? parse_prefill(fmt::format("{}", fmt::join(flags.prefill, " ")), "--prefill")
                                  : engine->default_prefill(ctx);
  return run;
}

}  // namespace tqlab::cli
