#include "engine/vllm_engine.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

std::vector<std::string_view> preset_names() {
  std::vector<std::string_view> names;
  for (const VllmPreset& preset : vllm_presets()) names.push_back(preset.name);
  return names;
}

// A spec as its quantizer prints it, so that "vllm_tq_key:nc,b=4" repeats "vllm_tq_key:b=4,nc";
// "" for one that does not parse (it then repeats nothing).
std::string canonical_spec(const std::string& spec) {
  try {
    return make_quantizer(spec)->spec();
  } catch (const InputError&) {
    return "";
  }
}

}  // namespace

std::vector<int> parse_vllm_skip_layers(const std::string& text) {
  std::vector<int> layers;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t plus = std::min(text.find('+', start), text.size());
    const std::string number = text.substr(start, plus - start);
    int layer = -1;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), layer);
    if (number.empty() || error != std::errc() || end != number.data() + number.size() || layer < 0 ||
        layer > 65535) {
      fail("skip '{}': expected layer numbers joined by '+', e.g. skip=0+5", text);
    }
    layers.push_back(layer);
    start = plus + 1;
  }
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  return layers;
}

PrefillRule vllm_attention_prefill(const VllmPreset& preset, PrefillRule requested) {
  if (preset.prefill == VllmPrefill::all_from_cache || requested.exact_chunk <= 0) return {};
  return {requested.exact_chunk, static_cast<int>(kVllmContinuationDecodeThreshold)};
}

std::string VllmEngine::spelling() const {
  std::vector<std::string> options;
  if (preset_ != nullptr) options.push_back(fmt::format("preset={}", preset_->name));
  if (!skip_.empty()) options.push_back(fmt::format("skip={}", fmt::join(skip_, "+")));
  return options.empty() ? "vllm" : fmt::format("vllm:{}", fmt::join(options, ","));
}

std::unique_ptr<Engine> VllmEngine::with_preset(const std::string& preset) const {
  return std::make_unique<VllmEngine>(&find_vllm_preset(preset), skip_);
}

std::string VllmEngine::supports() const {
  return fmt::format(
      "engine vllm takes --preset NAME ({}), which defines K, V and the layers kept at fp16 (--k/--v may only "
      "repeat its specs), the option skip=L+L+... (more layers kept: --kv-cache-dtype-skip-layers), --prefill "
      "quantized|exact C (default: one prefill of the chunk), and no per-layer specs, --window or --sink",
      fmt::join(preset_names(), ", "));
}

std::vector<std::string> VllmEngine::presets() const {
  std::vector<std::string> names;
  for (const std::string_view name : preset_names()) names.emplace_back(name);
  return names;
}

void VllmEngine::check_run(const EngineRunRequest& request) const {
  const auto refuse = [&](const std::string& what) {
    fail("{}: {} with engine {}; {}", request.where, what, spelling(), supports());
  };
  if (preset_ == nullptr) {
    refuse("no preset (--preset NAME, \"preset\" in a config)");
    return;
  }
  if (request.per_layer) refuse("K or V given per layer or head");
  const std::pair<const std::string*, std::string_view> roles[] = {{&request.k, preset_->key_spec},
                                                                     {&request.v, preset_->value_spec}};
  for (const auto& [given, defined] : roles) {
    if (canonical_spec(*given) != canonical_spec(std::string(defined))) {
      refuse(fmt::format("'{}' where the preset defines '{}'", *given, defined));
    }
  }
  if (request.window != 0) refuse(fmt::format("window {}", request.window));
  if (request.sink != 0) refuse(fmt::format("sink {}", request.sink));
}

EngineSpecs VllmEngine::defined_specs() const {
  if (preset_ == nullptr) return {};
  return {std::string(preset_->key_spec), std::string(preset_->value_spec)};
}

std::vector<int> VllmEngine::unquantized_layers(int layer_count) const {
  std::vector<int> layers;
  if (preset_ == nullptr) return layers;
  if (!skip_.empty() && skip_.back() >= layer_count) {
    fail("engine {}: skip layer {}, but the model has layers 0..{}", spelling(), skip_.back(), layer_count - 1);
  }
  for (int layer = 0; layer < layer_count; ++layer) {
    if (!vllm_layer_quantized(*preset_, layer, layer_count, skip_)) layers.push_back(layer);
  }
  return layers;
}

PrefillRule VllmEngine::attention_prefill(PrefillRule requested) const {
  return preset_ == nullptr ? requested : vllm_attention_prefill(*preset_, requested);
}

}  // namespace tqlab
