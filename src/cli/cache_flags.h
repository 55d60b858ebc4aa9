// --k, --v, --engine, --preset and --prefill: the KV cache a model runs under, as tqlab ppl and
// tqlab dump take it (docs/REFERENCE.md#ppl, docs/ENGINES.md).
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"

namespace CLI {
class App;
}

namespace tqlab::cli {

struct CacheFlags {
  std::string k, v;
  std::string engine = "tqlab";
  std::string preset;
  std::vector<std::string> prefill;  ///< the words of --prefill; empty: the engine's default
};

/// Adds the five options; `unset` says what --k/--v are when left out ("fp32, exact").
void add_cache_flags(CLI::App& command, CacheFlags& flags, const std::string& unset);

/// The flags resolved for chunks of `ctx` tokens.
struct CacheRun {
  std::string engine;  ///< canonical, the preset included ("vllm:preset=fp8")
  std::string k, v;    ///< as given, else the engine's (a preset's), else `unset_spec`
  PrefillRule prefill;  ///< as given, else the engine's default (Engine::default_prefill)
  bool prefill_given = false;
};

/// InputError naming the option: an unknown engine, a preset with an engine that takes none, a
/// prefill that does not parse. What the engine cannot run is its check_run's, later.
CacheRun resolve_cache_flags(const CacheFlags& flags, int ctx, const std::string& unset_spec);

}  // namespace tqlab::cli
