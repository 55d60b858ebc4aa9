#include "engine/engine.h"

#include <charconv>
#include <functional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "engine/llamacpp_engine.h"
#include "engine/vllm_engine.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

// tqlab's own semantics: the run's quantizers fake-quantize the cache (model/kv_hook.h)
// and attention is exact float attention over it (model/attention.h).
class TqlabEngine final : public Engine {
 public:
  std::string spelling() const override { return "tqlab"; }
  std::string supports() const override {
    return "engine tqlab takes any spec (per layer and head too), --window, --sink and --prefill quantized|exact C";
  }
  void check_run(const EngineRunRequest&) const override {}
  std::unique_ptr<EngineCache> bind(const std::string&, const std::string&, int) const override { return nullptr; }
};

// An engine's options: "key=value" pairs after the name's colon, comma-separated.
using EngineFactory =
    std::function<std::unique_ptr<Engine>(const std::vector<std::pair<std::string, std::string>>& options,
                                          const std::string& text, const std::string& option)>;

struct EngineEntry {
  const char* name;
  const char* options;  ///< the options it takes, for messages
  EngineFactory make;
};

[[noreturn]] void bad_option(const std::string& option, const std::string& text, const std::string& what,
                             const char* takes) {
  fail("{} '{}': {} (the engine takes {})", option, text, what, takes);
}

const std::vector<EngineEntry>& engines() {
  static const std::vector<EngineEntry> table = {
      {"tqlab", "no options",
       [](const auto& options, const std::string& text, const std::string& option) -> std::unique_ptr<Engine> {
         if (!options.empty()) bad_option(option, text, "unknown option '" + options.front().first + "'", "no options");
         return std::make_unique<TqlabEngine>();
       }},
      {"llama.cpp", "rot=on|off",
       [](const auto& options, const std::string& text, const std::string& option) -> std::unique_ptr<Engine> {
         bool rotation = true;
         for (const auto& [key, value] : options) {
           if (key != "rot") bad_option(option, text, "unknown option '" + key + "'", "rot=on|off");
           if (value != "on" && value != "off") bad_option(option, text, "rot=" + value, "rot=on|off");
           rotation = value == "on";
         }
         return std::make_unique<LlamaCppEngine>(rotation);
       }},
      {"vllm", kVllmEngineOptions,
       [](const auto& options, const std::string& text, const std::string& option) -> std::unique_ptr<Engine> {
         const VllmPreset* preset = nullptr;
         std::vector<int> skip;
         for (const auto& [key, value] : options) {
           if (key != "preset" && key != "skip") {
             bad_option(option, text, "unknown option '" + key + "'", kVllmEngineOptions);
           }
           try {
             if (key == "preset") preset = &find_vllm_preset(value);
             if (key == "skip") skip = parse_vllm_skip_layers(value);
           } catch (const InputError& error) {
             fail("{} '{}': {}", option, text, error.what());
           }
         }
         return std::make_unique<VllmEngine>(preset, skip);
       }},
  };
  return table;
}

}  // namespace

std::string PrefillRule::spelling() const {
  return exact_chunk > 0 ? fmt::format("exact {}", exact_chunk) : "quantized";
}

PrefillRule parse_prefill(const std::string& text, const std::string& option) {
  if (text == "quantized") return {};
  const std::string prefix = "exact ";
  if (text.rfind(prefix, 0) == 0) {
    const std::string number = text.substr(prefix.size());
    int chunk = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), chunk);
    if (error == std::errc() && end == number.data() + number.size() && chunk >= 1) return {chunk};
  }
  fail("{} '{}': expected 'quantized' or 'exact C' with C >= 1 tokens per prefill piece", option, text);
}

std::unique_ptr<Engine> parse_engine(const std::string& text, const std::string& option) {
  const std::string spelled = text.empty() ? "tqlab" : text;
  const auto colon = spelled.find(':');
  const std::string name = spelled.substr(0, colon);
  std::vector<std::pair<std::string, std::string>> options;
  if (colon != std::string::npos) {
    std::size_t start = colon + 1;
    while (start <= spelled.size()) {
      const auto comma = std::min(spelled.find(',', start), spelled.size());
      const std::string pair = spelled.substr(start, comma - start);
      const auto equals = pair.find('=');
      if (equals == std::string::npos || equals == 0) {
        fail("{} '{}': option '{}' is not key=value", option, text, pair);
      }
      options.emplace_back(pair.substr(0, equals), pair.substr(equals + 1));
      start = comma + 1;
    }
  }
  for (const EngineEntry& entry : engines()) {
    if (name == entry.name) return entry.make(options, text, option);
  }
  fail("{} '{}': no such engine (engines: {})", option, text, fmt::join(engine_names(), ", "));
}

std::string engine_with_preset(const std::string& engine, const std::string& preset, const std::string& option) {
  const std::unique_ptr<Engine> chosen = parse_engine(engine, option);
  if (preset.empty()) return chosen->spelling();
  std::unique_ptr<Engine> preset_engine;
  try {
    preset_engine = chosen->with_preset(preset);
  } catch (const InputError& error) {
    fail("{} '{}': {}", option, preset, error.what());
  }
  if (preset_engine == nullptr) {
    fail("{} '{}': presets are engine vllm's (--engine vllm), not engine {}'s; {}", option, preset,
         chosen->spelling(), chosen->supports());
  }
  return preset_engine->spelling();
}

std::string canonical_engine(const std::string& text, const std::string& option) {
  return parse_engine(text, option)->spelling();
}

std::string engine_cache_type(const Engine& engine, const std::string& spec) {
  for (const std::string& type : engine.cache_types()) {
    if (engine.quantizer_spec(type) == spec) return type;
  }
  return "";
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const EngineEntry& entry : engines()) names.emplace_back(entry.name);
  return names;
}

bool prefill_written(const std::string& engine, PrefillRule prefill) {
  return prefill != PrefillRule{} || parse_engine(engine, "engine")->default_prefill(1) != PrefillRule{};
}

bool is_default_engine(const std::string& spelling) { return spelling.empty() || spelling == "tqlab"; }

std::unique_ptr<Quantizer> engine_cache_quantizer(const Engine& engine, const std::string& cache_type) {
  std::unique_ptr<Quantizer> quantizer = engine.cache_quantizer(cache_type);
  return quantizer ? std::move(quantizer) : make_quantizer(engine.quantizer_spec(cache_type));
}

}  // namespace tqlab
