// Engines: what a serving engine does around a KV-cache format (docs/ENGINES.md).
//
// A block format (quant/) is a plain quantizer whose bytes its owner defines. An
// engine is the policy around it: which channel order the cache stores, what it
// rotates, what the query is converted to before K.Q, in what precision the
// weighted values are summed, which tokens read the quantized cache. One object
// per engine, each rule citing the source file and function it follows:
//   tqlab      tqlab's own semantics (model/kv_hook.h, model/attention.h): any
//              spec, windows and sinks, exact float attention over the decoded cache;
//   llama.cpp  llama.cpp's CPU flash-attention path (engine/llamacpp_engine.h);
//   vllm       a vLLM preset (--kv-cache-dtype): its formats, the layers it keeps at
//              the model's precision, its prefill rule (engine/vllm_engine.h).
// A new engine is one more class and one row in the engines table (engine.cpp).
//
// Prefill: how the queries of a chunk see the chunk's own keys and values.
//   quantized  every query reads the quantized cache, its own token included
//              (llama.cpp: a batch is written to the cache before attention reads it);
//   exact C    the chunk is prefilled in pieces of C tokens; a query reads its own
//              piece's keys and values exact and the quantized cache only for earlier
//              pieces (a server's chunked prefill attending its fresh K/V).
// An engine may refine the rule for attention (Engine::attention_prefill): vLLM's
// TurboQuant reads a later piece of at most 128 tokens from the cache, its own tokens too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quant/quantizer.h"

namespace tqlab {

/// Which tokens a query reads exact, besides what the cache holds.
struct PrefillRule {
  int exact_chunk = 0;  ///< 0: "quantized"; C > 0: "exact C"
  /// Set by an engine, never spelled: a piece after the first reads its own keys and values
  /// exact only when it holds more than this many tokens (0: every piece does).
  int later_piece_exact_above = 0;

  /// The first key query t of a chunk of `tokens` tokens reads exact (t + 1: none). Never
  /// decreases with t.
  int first_exact_key(int t, int tokens) const {
    if (exact_chunk <= 0) return t + 1;
    const int start = t - t % exact_chunk;
    const int length = std::min(exact_chunk, tokens - start);
    if (start > 0 && later_piece_exact_above > 0 && length <= later_piece_exact_above) return t + 1;
    return start;
  }
  /// "quantized" or "exact C".
  std::string spelling() const;
  bool operator==(const PrefillRule&) const = default;
};

/// Parses "quantized" or "exact C" (C >= 1); InputError naming `option`.
PrefillRule parse_prefill(const std::string& text, const std::string& option);

/// One layer's attention inputs, token-major as the forward keeps them: q is
/// tokens x q_stride with query head h at column h * head_dim; k, v are tokens x
/// kv_stride with kv head g at column g * head_dim; channels in Hugging Face's
/// order (post-RoPE, rotate-half pairs i and i + head_dim/2). Query head h reads
/// kv head h / (q_heads / kv_heads).
struct EngineAttentionInput {
  int tokens = 0;
  int q_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  float scale = 1.0f;  ///< 1/sqrt(head_dim)
  const float* q = nullptr;
  std::int64_t q_stride = 0;
  const float* k = nullptr;
  const float* v = nullptr;
  std::int64_t kv_stride = 0;
  PrefillRule prefill;
};

/// An engine bound to one run's K and V cache types: computes a layer's attention
/// the way the engine does.
class EngineCache {
 public:
  virtual ~EngineCache() = default;
  /// out: tokens x q_stride, like q. Adds the bytes the engine's cache holds for
  /// this layer's keys and values to key_bytes / value_bytes.
  virtual void attend(const EngineAttentionInput& input, float* out, std::uint64_t& key_bytes,
                      std::uint64_t& value_bytes) const = 0;
};

/// What a run asks of an engine, for its checks.
struct EngineRunRequest {
  std::string k, v;        ///< the K and V specs as given (the defaults, when given per layer)
  bool per_layer = false;  ///< K or V given per layer or head
  bool per_head = false;   ///< K or V given per head
  std::vector<std::string> layer_specs;  ///< with per_layer: every other spec K or V names
  int window = 0, sink = 0;
  PrefillRule prefill;
  int head_dim = 0;   ///< 0: not known yet (checked again when the model is)
  std::string where;  ///< names the run in messages: "--k/--v", "runs[2]"
};

/// K and V specs, as tqlab spells them.
struct EngineSpecs {
  std::string k, v;
};

class Engine {
 public:
  virtual ~Engine() = default;
  /// The canonical spelling, options included: parse_engine(spelling())->spelling() == spelling().
  virtual std::string spelling() const = 0;
  /// One sentence: what this engine runs (cache types, options), for messages and `tqlab list`.
  virtual std::string supports() const = 0;
  /// tqlab's spec for a cache type this engine spells its own way (llama.cpp's "f16" is "fp16").
  virtual std::string quantizer_spec(const std::string& cache_type) const { return cache_type; }
  /// The cache types --k/--v take with this engine; empty: any tqlab spec.
  virtual std::vector<std::string> cache_types() const { return {}; }
  /// The presets --preset names with this engine (vLLM's); empty: it takes none.
  virtual std::vector<std::string> presets() const { return {}; }
  /// This engine with the preset `preset` instead of its own (its other options kept); null when it
  /// takes no preset. InputError for a preset it does not know.
  virtual std::unique_ptr<Engine> with_preset(const std::string& preset) const {
    (void)preset;
    return nullptr;
  }
  /// InputError, naming request.where and what the engine supports, for a run it cannot run.
  virtual void check_run(const EngineRunRequest& request) const = 0;
  /// The engine's cache of `cache_type` as a quantizer of one head's rows in Hugging Face's
  /// order (what it stores for them, read back: `tqlab roundtrip --engine`); null when the
  /// engine stores what tqlab's own quantizer of the spec does.
  virtual std::unique_ptr<Quantizer> cache_quantizer(const std::string& cache_type) const {
    (void)cache_type;
    return nullptr;
  }
  /// The engine's attention for K and V (a run's, or one layer's of a run given per layer, checked by
  /// check_run), or null when the engine leaves attention to tqlab's own path (model/kv_hook.h,
  /// model/attention.h).
  virtual std::unique_ptr<EngineCache> bind(const std::string& k, const std::string& v, int head_dim) const = 0;
  /// The K and V specs the engine itself defines (a vLLM preset's formats), which a run's --k/--v
  /// may only repeat; empty strings: the run names them.
  virtual EngineSpecs defined_specs() const { return {}; }
  /// The layers (0-based, ascending) of a model of `layer_count` layers whose keys and values the
  /// engine keeps at the model's own precision whatever the run's specs (vLLM's boundary layers);
  /// InputError when the engine names a layer the model lacks (vllm:skip=...).
  virtual std::vector<int> unquantized_layers(int layer_count) const {
    (void)layer_count;
    return {};
  }
  /// The spec those layers are kept in: "fp16", vLLM's dtype for float32 and float16 models.
  static constexpr const char* kUnquantizedSpec = "fp16";
  /// The rule attention applies for a run that asks for `requested`; default: as asked.
  virtual PrefillRule attention_prefill(PrefillRule requested) const { return requested; }
  /// The prefill of a run that names none, for chunks of `ctx` tokens: "quantized" (every query
  /// reads the cache, llama.cpp's way) unless the engine prefills a chunk at once (vLLM).
  virtual PrefillRule default_prefill(int ctx) const {
    (void)ctx;
    return {};
  }
};

/// What `engine`'s cache of `cache_type` stores for one head's rows, read back, as a quantizer: the
/// engine's own (Engine::cache_quantizer) where it has one, else tqlab's quantizer of the engine's spec
/// of the type. InputError for a spec tqlab does not know.
std::unique_ptr<Quantizer> engine_cache_quantizer(const Engine& engine, const std::string& cache_type);

/// "tqlab" (the default: an empty text too), "llama.cpp", "llama.cpp:rot=off", ...;
/// InputError naming `option` and the engines there are.
std::unique_ptr<Engine> parse_engine(const std::string& text, const std::string& option);

/// The canonical spelling of `text` ("" -> "tqlab"); InputError as parse_engine.
std::string canonical_engine(const std::string& text, const std::string& option);

/// `engine` with the preset `preset` ("": `engine` as it is): "vllm" + "fp8" -> "vllm:preset=fp8",
/// replacing a preset `engine` names and keeping its other options. InputError naming `option` when
/// the engine takes no preset (saying which does) or the preset is unknown (listing the presets).
std::string engine_with_preset(const std::string& engine, const std::string& preset, const std::string& option);

/// Whether a run of `engine` (canonical) spells its `prefill` out in results and ids: unless it is
/// "quantized" and so is the engine's default (documents of tqlab's and llama.cpp's runs keep their
/// bytes; a vllm run's "quantized" must be written, its default being one prefill of each chunk).
bool prefill_written(const std::string& engine, PrefillRule prefill);

/// The cache type of `engine` that it spells `spec` in tqlab (Engine::quantizer_spec: llama.cpp's
/// "f16" for "fp16"), or "" when it has none.
std::string engine_cache_type(const Engine& engine, const std::string& spec);

/// The name of every engine, in table order.
std::vector<std::string> engine_names();

/// True for the default engine's spelling ("tqlab" or "").
bool is_default_engine(const std::string& spelling);

}  // namespace tqlab
