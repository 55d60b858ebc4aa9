#include "model/gguf_model.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "blocks/ggml_type.h"
#include "core/error.h"
#include "core/text.h"
#include "model/weight_matrix.h"

namespace tqlab {
namespace {

constexpr std::int64_t kMaxSize = 1 << 24;  // as model_config.cpp: beyond any real width, below int overflow

// The names of the types dequantize_ggml_row decodes, for a message.
std::string decodable_ggml_type_names() {
  std::vector<std::string> names;
  for (std::uint32_t id = 0; id < 256; ++id) {
    const GgmlTypeTraits* traits = ggml_type_traits(id);
    if (traits != nullptr && traits->decodable) names.emplace_back(traits->name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string shape_text(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Reads the {arch}.* keys with the file's messages.
class ConfigReader {
 public:
  ConfigReader(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return fmt::format("{}.{}", arch_, suffix); }

  std::optional<int> size(std::string_view suffix) const {
    const std::string name = key(suffix);
    const auto value = file_.get_integer(name);
    if (!value) return std::nullopt;
    if (*value < 1 || *value > kMaxSize)
      fail("{}: metadata '{}' is {}; expected 1 to {}", where(), name, *value, kMaxSize);
    return static_cast<int>(*value);
  }
  int required_size(std::string_view suffix) const {
    const auto value = size(suffix);
    if (!value) fail("{}: metadata '{}' is missing (a {} model needs it)", where(), key(suffix), arch_);
    return *value;
  }
  std::optional<double> positive(std::string_view suffix) const {
    const std::string name = key(suffix);
    const auto value = file_.get_number(name);
    if (value && !(*value > 0)) fail("{}: metadata '{}' is {}; expected a positive number", where(), name, *value);
    return value;
  }
  std::string where() const { return fmt::format("model '{}'", file_.path()); }

 private:
  const GgufFile& file_;
  std::string arch_;
};

const Architecture& read_architecture(const GgufFile& file) {
  const std::string where = fmt::format("model '{}'", file.path());
  const auto name = file.get_string("general.architecture");
  if (!name) fail("{}: metadata 'general.architecture' is missing", where);
  for (const Architecture& entry : architectures()) {
    if (entry.gguf_name != nullptr && *name == entry.gguf_name) return entry;
  }
  fail("{}: general.architecture '{}' is not supported (supported: {})", where, printable(*name),
       supported_names(NamingConvention::gguf));
}

// Refuses the {arch}.* keys of what the forward pass does not do: mixture-of-experts layers and sliding-window
// attention.
void refuse_unsupported_layers(const GgufFile& file, const ConfigReader& keys) {
  const std::string where = keys.where();
  if (const auto experts = file.get_integer(keys.key("expert_count")); experts && *experts > 0) {
    fail("{}: metadata '{}' is {}: mixture-of-experts layers are not supported", where, keys.key("expert_count"),
         *experts);
  }
  for (const char* suffix : {"attention.sliding_window", "attention.sliding_window_pattern"}) {
    if (file.find(keys.key(suffix))) {
      fail("{}: metadata '{}' is present: sliding-window attention is not supported", where, keys.key(suffix));
    }
  }
}

// The sizes of the layers: count, hidden and feed-forward widths, query and kv heads, and the head dim (even;
// the value and RoPE dims must equal it).
void read_sizes(const ConfigReader& keys, ModelConfig& config) {
  const std::string where = keys.where();
  config.layers = keys.required_size("block_count");
  config.hidden_size = keys.required_size("embedding_length");
  config.intermediate_size = keys.required_size("feed_forward_length");
  config.q_heads = keys.required_size("attention.head_count");
  config.kv_heads = keys.size("attention.head_count_kv").value_or(config.q_heads);
  if (config.q_heads % config.kv_heads != 0) {
    fail("{}: metadata '{}' is {}, which does not divide the {} query heads", where,
         keys.key("attention.head_count_kv"), config.kv_heads, config.q_heads);
  }
  const auto head_dim = keys.size("attention.key_length");
  if (!head_dim && config.hidden_size % config.q_heads != 0) {
    fail("{}: metadata '{}' is missing and {} heads do not divide the hidden size {}", where,
         keys.key("attention.key_length"), config.q_heads, config.hidden_size);
  }
  config.head_dim = head_dim.value_or(config.hidden_size / config.q_heads);
  if (config.head_dim % 2 != 0) fail("{}: the head dim {} is odd; RoPE rotates pairs", where, config.head_dim);
  for (const char* suffix : {"attention.value_length", "rope.dimension_count"}) {
    const auto value = keys.size(suffix);
    if (value && *value != config.head_dim) {
      fail("{}: metadata '{}' is {}; only {} (the head dim) is supported", where, keys.key(suffix), *value,
           config.head_dim);
    }
  }
}

// The RMS norm's epsilon, RoPE's base and scaling (none or linear), and the context length when given.
void read_norm_and_rope(const GgufFile& file, const ConfigReader& keys, ModelConfig& config) {
  const std::string where = keys.where();
  const auto epsilon = keys.positive("attention.layer_norm_rms_epsilon");
  if (!epsilon) fail("{}: metadata '{}' is missing", where, keys.key("attention.layer_norm_rms_epsilon"));
  config.rms_norm_eps = *epsilon;
  config.rope.theta = keys.positive("rope.freq_base").value_or(10000.0);
  if (const auto scaling = file.get_string(keys.key("rope.scaling.type")); scaling && *scaling != "none") {
    if (*scaling != "linear") {
      fail("{}: metadata '{}' is '{}'; supported: none, linear (and Llama 3's rope_freqs tensor)", where,
           keys.key("rope.scaling.type"), printable(*scaling));
    }
    const auto factor = keys.positive("rope.scaling.factor");
    if (!factor || *factor < 1) fail("{}: metadata '{}' must be at least 1", where, keys.key("rope.scaling.factor"));
    config.rope.scaling = RopeConfig::Scaling::linear;
    config.rope.factor = *factor;
  }
  if (const auto context = file.get_integer(keys.key("context_length")); context && *context > 0) {
    config.max_position_embeddings = *context;
  }
}

// The vocabulary size: the rows of token_embd.weight, a matrix [vocab, hidden] (ggml's ne order reversed),
// which {arch}.vocab_size must agree with when given.
int read_vocab_size(const GgufFile& file, const ConfigReader& keys, int hidden_size) {
  const std::string where = keys.where();
  const GgufTensor* embedding = file.find_tensor(weight_name(WeightRole::embedding, -1, NamingConvention::gguf));
  if (embedding == nullptr || embedding->ne.size() != 2) {
    fail("{}: tensor 'token_embd.weight' is {} (expected a matrix [vocab, {}])", where,
         embedding ? "shaped " + embedding->shape_string() : std::string("missing"), hidden_size);
  }
  if (embedding->ne[1] < 1 || embedding->ne[1] > std::numeric_limits<int>::max()) {
    fail("{}: tensor 'token_embd.weight' has {} rows", where, embedding->ne[1]);
  }
  const int vocab_size = static_cast<int>(embedding->ne[1]);
  if (const auto vocab = file.get_integer(keys.key("vocab_size")); vocab && *vocab != vocab_size) {
    fail("{}: metadata '{}' is {} but token_embd.weight has {} rows", where, keys.key("vocab_size"), *vocab,
         vocab_size);
  }
  return vocab_size;
}

// What layer 0's tensors and the output decide: biases, a tied output, Llama 3's rope_freqs factors.
void read_tensor_options(const GgufFile& file, const Architecture& family, const ConfigReader& keys,
                         ModelConfig& config) {
  const auto present = [&](WeightRole role) {
    return file.find_tensor(weight_name(role, 0, NamingConvention::gguf)) != nullptr;  // layer 0 speaks for all
  };
  config.qkv_bias = family.qkv_bias || present(WeightRole::q_bias);
  config.o_bias = present(WeightRole::o_bias);
  config.qk_norm = family.qk_norm;
  config.tie_word_embeddings = !present(WeightRole::lm_head);
  if (present(WeightRole::rope_freqs)) {
    if (config.rope.scaling != RopeConfig::Scaling::none) {
      fail("{}: both '{}' and a rope_freqs.weight tensor: one RoPE scaling at a time is supported", keys.where(),
           keys.key("rope.scaling.type"));
    }
    config.rope.scaling = RopeConfig::Scaling::factors;
  }
}

}  // namespace

ModelConfig read_gguf_config(const GgufFile& file) {
  const Architecture& family = read_architecture(file);
  const ConfigReader keys(file, family.gguf_name);
  ModelConfig config;
  config.path = file.path();
  config.architecture = family.gguf_name;
  config.family = family.family;

  refuse_unsupported_layers(file, keys);
  read_sizes(keys, config);
  read_norm_and_rope(file, keys, config);

  // What the tensors decide: the vocabulary, biases, tied output, rope factors.
  config.vocab_size = read_vocab_size(file, keys, config.hidden_size);
  read_tensor_options(file, family, keys, config);
  if (const auto bos = file.get_integer("tokenizer.ggml.bos_token_id")) {
    if (*bos < 0 || *bos >= config.vocab_size) {
      fail("{}: metadata 'tokenizer.ggml.bos_token_id' is {}, outside the vocabulary of {}", keys.where(), *bos,
           config.vocab_size);
    }
    config.bos_token_id = *bos;
  }
  return config;
}

std::unique_ptr<GgufModel> GgufModel::open(const std::string& path) {
  auto model = std::unique_ptr<GgufModel>(new GgufModel());
  model->path_ = path;
  model->file_ = GgufFile::open(path);
  const GgufFile& file = *model->file_;
  model->config_ = read_gguf_config(file);
  ModelConfig& config = model->config_;
  model->interleaved_qk_ = architecture_of(config.family).gguf_interleaved_qk;
  model->files_.push_back({path, std::filesystem::path(path).filename().string(), file.file_size()});
  const std::string where = fmt::format("model '{}'", path);

  std::set<std::string_view> expected;
  for (const auto& [role, layer, name, shape] : expected_weights(config, NamingConvention::gguf)) {
    const GgufTensor* tensor = file.find_tensor(name);
    if (tensor == nullptr) fail("{}: tensor '{}' is missing (expected shape {})", where, name, shape_text(shape));
    if (tensor->shape() != shape) {
      fail("{}: tensor '{}' has shape {}; expected {}", where, name, tensor->shape_string(), shape_text(shape));
    }
    if (!tensor->traits->decodable) {
      fail("{}: tensor '{}' is {}, a type tqlab cannot decode (it decodes {})", where, name, tensor->traits->name,
           decodable_ggml_type_names());
    }
    expected.insert(tensor->name);
  }
  for (const GgufTensor& tensor : file.tensors()) {
    if (!expected.count(tensor.name)) {
      fail("{}: tensor '{}' ({}, shape {}) is not part of a {} model as tqlab runs it", where, printable(tensor.name),
           tensor.traits->name, tensor.shape_string(), config.architecture);
    }
  }
  if (config.rope.scaling == RopeConfig::Scaling::factors) {
    config.rope.frequency_factors = weight_vector(model->weight(WeightRole::rope_freqs, -1));
    for (float factor : config.rope.frequency_factors) {
      if (!(factor > 0) || !std::isfinite(factor)) fail("{}: tensor 'rope_freqs.weight' holds {}", where, factor);
    }
  }
  return model;
}

std::string GgufModel::weight_dtype() const {
  std::set<std::string> types;
  for (const GgufTensor& tensor : file_->tensors()) {
    if (tensor.ne.size() == 2) types.insert(tensor.traits->name);
  }
  return types.size() == 1 ? *types.begin() : "mixed";
}

StoredWeight GgufModel::weight(WeightRole role, int layer) const {
  const std::string name = weight_name(role, layer, NamingConvention::gguf);
  const GgufTensor* tensor = file_->find_tensor(name);
  if (tensor == nullptr) throw InternalError(fmt::format("gguf model: tensor '{}' was not validated", name));
  StoredWeight out;
  out.name = tensor->name;
  out.type_id = tensor->type_id;
  out.shape = tensor->shape();
  out.data = tensor->data;
  out.row_bytes = tensor->row_bytes();
  const bool rotated = role == WeightRole::q || role == WeightRole::q_bias || role == WeightRole::k ||
                       role == WeightRole::k_bias;
  if (interleaved_qk_ && rotated) out.interleaved_head_dim = config_.head_dim;
  return out;
}

}  // namespace tqlab
