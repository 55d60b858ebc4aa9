#include "model/model_config.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "io/json_reader.h"
#include "model/architecture.h"

namespace tqlab {
namespace {

constexpr const char* kKind = "model config";
constexpr std::int64_t kMaxSize = 1 << 24;  // far beyond any real model's widths, far below int overflow

std::string supported_architectures() { return supported_names(NamingConvention::hugging_face); }

bool is_null(const std::optional<JsonReader>& reader) { return !reader || reader->value().is_null(); }

// A present, non-null member.
std::optional<JsonReader> member(const JsonReader& reader, std::string_view key) {
  auto found = reader.find(key);
  if (is_null(found)) return std::nullopt;
  return found;
}

int read_size(const JsonReader& root, std::string_view key, std::optional<int> fallback = std::nullopt) {
  const auto found = root.find(key);
  if (is_null(found)) {
    if (fallback) return *fallback;
    if (!found) (void)root.at(key);  // throws "missing key"
    found->fail("null; expected a positive integer");
  }
  return static_cast<int>(found->as_integer(1, kMaxSize));
}

double read_positive(const JsonReader& reader, std::string_view key, double fallback) {
  const auto found = member(reader, key);
  if (!found) return fallback;
  const double value = found->as_number();
  if (!(value > 0)) found->fail("{} must be positive", value);
  return value;
}

bool read_bool(const JsonReader& root, std::string_view key, bool fallback) {
  const auto found = member(root, key);
  return found ? found->as_bool() : fallback;
}

std::string json_text(const JsonReader& reader) { return reader.value().dump(); }

const Architecture& read_family(const JsonReader& root) {
  if (const auto architectures = member(root, "architectures")) {
    const std::vector<JsonReader> names = architectures->elements();
    if (names.size() != 1) {
      architectures->fail("{} names {} architectures; one of {} is supported", json_text(*architectures),
                          names.size(), supported_architectures());
    }
    const std::string name = names[0].as_string();
    for (const Architecture& family : tqlab::architectures()) {
      if (name == family.hf_class) return family;
    }
    names[0].fail("\"{}\" is not supported (supported: {})", name, supported_architectures());
  }
  // No architectures list: model_type says which family.
  const JsonReader type = root.at("model_type");
  const std::string name = type.as_string();
  for (const Architecture& family : tqlab::architectures()) {
    if (name == family.model_type) return family;
  }
  type.fail("\"{}\" is not supported and no 'architectures' key names one (supported: {})", name,
            supported_architectures());
}

// rope_scaling (transformers 4.x: beside rope_theta) or rope_parameters (5.x: theta inside).
RopeConfig read_rope(const JsonReader& root) {
  RopeConfig rope;
  std::optional<JsonReader> scaling = member(root, "rope_parameters");
  const bool parameters = scaling.has_value();
  if (!parameters) scaling = member(root, "rope_scaling");
  if (parameters) {
    rope.theta = read_positive(*scaling, "rope_theta", read_positive(root, "rope_theta", 10000.0));
  } else {
    rope.theta = read_positive(root, "rope_theta", 10000.0);
  }
  if (!scaling) return rope;
  if (!scaling->is_object()) scaling->fail("expected an object or null, got {}", scaling->type_name());
  // "type" is the older spelling of "rope_type".
  std::optional<JsonReader> type = member(*scaling, "rope_type");
  if (!type) type = member(*scaling, "type");
  const std::string name = type ? type->as_string() : "default";
  if (name == "default") return rope;
  const auto factor = [&] {
    const double value = scaling->at("factor").as_number();
    if (!(value >= 1.0)) scaling->at("factor").fail("{} must be at least 1", value);
    return value;
  };
  if (name == "linear") {
    rope.scaling = RopeConfig::Scaling::linear;
    rope.factor = factor();
    return rope;
  }
  if (name == "llama3") {
    rope.scaling = RopeConfig::Scaling::llama3;
    rope.factor = factor();
    rope.low_freq_factor = read_positive(*scaling, "low_freq_factor", 0.0);
    rope.high_freq_factor = read_positive(*scaling, "high_freq_factor", 0.0);
    rope.original_max_position_embeddings = read_positive(*scaling, "original_max_position_embeddings", 0.0);
    for (const char* key : {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
      (void)scaling->at(key);  // required: "missing key" otherwise
    }
    if (!(rope.high_freq_factor > rope.low_freq_factor)) {
      scaling->fail("high_freq_factor {} must exceed low_freq_factor {}", rope.high_freq_factor, rope.low_freq_factor);
    }
    return rope;
  }
  type->fail("\"{}\" is not supported (supported: default, linear, llama3)", name);
}

// The smallest window of the layers that slide, or none.
void read_sliding_window(const JsonReader& root, ModelConfig& config) {
  const auto window = member(root, "sliding_window");
  if (config.family == ModelFamily::llama) return;  // Llama has no sliding windows
  if (config.family == ModelFamily::mistral) {
    if (window) {
      config.sliding_window = window->as_integer(1, std::numeric_limits<std::int64_t>::max());
      config.sliding_window_key = "sliding_window";
    }
    return;
  }
  // Qwen2/Qwen3: a layer slides when layer_types says so, or (older configs) when
  // use_sliding_window is set and the layer index is at least max_window_layers.
  bool any_sliding = false;
  if (const auto types = member(root, "layer_types")) {
    for (const JsonReader& type : types->elements()) any_sliding |= type.as_string() == "sliding_attention";
    if (any_sliding) config.sliding_window_key = "sliding_window (layer_types has sliding_attention)";
  } else if (read_bool(root, "use_sliding_window", false)) {
    const auto first = member(root, "max_window_layers");
    const std::int64_t first_sliding = first ? first->as_integer(0, kMaxSize) : 28;
    any_sliding = first_sliding < config.layers;
    config.sliding_window_key = fmt::format("sliding_window (use_sliding_window, layers {}..{})", first_sliding,
                                            config.layers - 1);
  }
  if (any_sliding && window) config.sliding_window = window->as_integer(1, std::numeric_limits<std::int64_t>::max());
}

}  // namespace

// The family's name is its Hugging Face model_type, from the one table of families.
const char* family_name(ModelFamily family) {
  return architecture_of(family).model_type;
}

ModelConfig parse_model_config(const nlohmann::json& document, const std::string& path) {
  const JsonReader root(document, path, "", kKind);
  if (!root.is_object()) root.fail("expected a JSON object, got {}", root.type_name());
  ModelConfig config;
  config.path = path;
  const Architecture& family = read_family(root);
  config.architecture = family.hf_class;
  config.family = family.family;

  if (const auto quantization = member(root, "quantization_config")) {
    quantization->fail("quantized checkpoints are not supported (weights must be F32, F16 or BF16)");
  }
  if (const auto act = member(root, "hidden_act")) {
    if (act->as_string() != "silu") act->fail("\"{}\" is not supported (supported: silu)", act->as_string());
  }
  if (const auto partial = member(root, "partial_rotary_factor")) {
    if (partial->as_number() != 1.0) partial->fail("{} is not supported (supported: 1.0)", partial->as_number());
  }

  config.vocab_size = read_size(root, "vocab_size");
  config.hidden_size = read_size(root, "hidden_size");
  config.intermediate_size = read_size(root, "intermediate_size");
  config.layers = read_size(root, "num_hidden_layers");
  config.q_heads = read_size(root, "num_attention_heads");
  config.kv_heads = read_size(root, "num_key_value_heads",
                              family.family == ModelFamily::llama ? std::optional<int>(config.q_heads) : std::nullopt);
  if (config.q_heads % config.kv_heads != 0) {
    root.at("num_key_value_heads")
        .fail("{} does not divide num_attention_heads {}", config.kv_heads, config.q_heads);
  }
  // Qwen3Config defaults head_dim to 128; the others to hidden_size / heads.
  std::optional<int> head_dim_default;
  if (family.family == ModelFamily::qwen3) {
    head_dim_default = 128;
  } else if (config.hidden_size % config.q_heads == 0) {
    head_dim_default = config.hidden_size / config.q_heads;
  } else if (is_null(root.find("head_dim"))) {
    root.at("num_attention_heads")
        .fail("{} does not divide hidden_size {}, and no head_dim says how wide a head is", config.q_heads,
              config.hidden_size);
  }
  config.head_dim = read_size(root, "head_dim", head_dim_default);
  if (config.head_dim % 2 != 0) root.at("head_dim").fail("{} is odd; RoPE rotates pairs of channels", config.head_dim);

  config.rms_norm_eps = read_positive(root, "rms_norm_eps", 1e-6);
  config.rope = read_rope(root);
  config.tie_word_embeddings = read_bool(root, "tie_word_embeddings", false);
  const auto max_positions = member(root, "max_position_embeddings");
  config.max_position_embeddings =
      max_positions ? max_positions->as_integer(1, std::numeric_limits<std::int64_t>::max()) : 0;
  if (const auto bos = member(root, "bos_token_id")) {
    if (bos->is_array()) bos->fail("a list of BOS ids is not supported; one id is");
    config.bos_token_id = bos->as_integer(0, config.vocab_size - 1);
  }

  switch (family.family) {
    case ModelFamily::llama:
      config.qkv_bias = config.o_bias = read_bool(root, "attention_bias", false);
      config.mlp_bias = read_bool(root, "mlp_bias", false);
      break;
    case ModelFamily::mistral: break;
    case ModelFamily::qwen2: config.qkv_bias = family.qkv_bias; break;
    case ModelFamily::qwen3:
      config.qkv_bias = config.o_bias = read_bool(root, "attention_bias", false);
      config.qk_norm = family.qk_norm;
      break;
  }
  read_sliding_window(root, config);
  return config;
}

ModelConfig read_model_config(const std::string& path) { return parse_model_config(read_json_file(path, kKind), path); }

void check_context(const ModelConfig& config, std::int64_t ctx, const char* option) {
  // Positions past the trained range still compute (RoPE is defined for any position), but what
  // they measure is not the model's behaviour: said once per process, however many plans ask.
  static std::atomic<bool> warned{false};
  if (config.max_position_embeddings > 0 && ctx > config.max_position_embeddings && !warned.exchange(true)) {
    log::warn("{} {} exceeds max_position_embeddings {} of '{}': positions past it were never trained", option, ctx,
              config.max_position_embeddings, config.path);
  }
  if (config.sliding_window && ctx > *config.sliding_window) {
    fail("{} {} exceeds the sliding window of {} tokens that '{}' configures ({}): sliding-window attention is not "
         "implemented; use {} {} or less",
         option, ctx, *config.sliding_window, config.path, config.sliding_window_key, option, *config.sliding_window);
  }
}

}  // namespace tqlab
