#include "model/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/text.h"
#include "io/json_reader.h"
#include "model/weight_matrix.h"

namespace tqlab {
namespace {

using Shape = std::vector<std::int64_t>;

std::string shape_text(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

bool is_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// Old checkpoints saved RoPE's frequencies; transformers ignores them on load.
bool ignorable(const std::string& name) {
  static const std::regex inv_freq(R"(model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq)");
  return std::regex_match(name, inv_freq);
}

// The shard files of an index, in first-mention order, each with the tensors the index puts there.
std::vector<std::pair<std::string, std::set<std::string>>> read_index(const std::string& path) {
  const nlohmann::json document = read_json_file(path, "checkpoint index");
  const JsonReader root(document, path, "", "checkpoint index");
  std::vector<std::pair<std::string, std::set<std::string>>> shards;
  for (const auto& [name, file] : root.at("weight_map").members()) {
    const std::string shard = file.as_string();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
      file.fail("\"{}\" is not a file name in the checkpoint's folder", printable(shard));
    }
    auto at = std::find_if(shards.begin(), shards.end(), [&](const auto& entry) { return entry.first == shard; });
    if (at == shards.end()) at = shards.insert(shards.end(), {shard, {}});
    at->second.insert(name);
  }
  if (shards.empty()) root.at("weight_map").fail("names no tensors");
  std::sort(shards.begin(), shards.end());  // by file name: model-00001-of-00003 first
  return shards;
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir) {
  auto checkpoint = std::unique_ptr<Checkpoint>(new Checkpoint());
  checkpoint->dir_ = dir;
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    fail("model '{}': not a folder (expected a Hugging Face checkpoint folder with config.json and "
         "model.safetensors)",
         dir);
  }
  const std::string base = (std::filesystem::path(dir) / "").string();
  const std::string config_path = base + "config.json";
  if (struct stat info {}; ::stat(config_path.c_str(), &info) != 0) {
    // Absent is the common case; a folder tqlab may not search, or a link that loops, says so instead.
    if (errno == ENOENT) fail("model '{}': no config.json in the folder", dir);
    fail("model '{}': cannot read config.json: {}", dir, std::strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    fail("model '{}': config.json is not a regular file", dir);
  }
  checkpoint->config_ = read_model_config(config_path);
  const ModelConfig& config = checkpoint->config_;

  // Which files hold which tensors.
  std::vector<std::pair<std::string, std::set<std::string>>> shards;  // empty set: the whole file
  const std::string single = base + "model.safetensors";
  const std::string index = base + "model.safetensors.index.json";
  std::string index_path;
  if (is_file(single)) {
    shards.push_back({"model.safetensors", {}});
  } else if (is_file(index)) {
    index_path = index;
    shards = read_index(index);
  } else {
    const bool torch_bin = is_file(base + "pytorch_model.bin") || is_file(base + "pytorch_model.bin.index.json");
    fail("model '{}': no model.safetensors or model.safetensors.index.json{}", dir,
         torch_bin ? " (pytorch_model.bin is a pickle, which tqlab does not read: convert it to safetensors)" : "");
  }

  // Every tensor of every file, by name.
  std::map<std::string, std::pair<const TensorView*, const SourceFile*>> found;
  for (const auto& [name, listed] : shards) {
    SourceFile weights;
    weights.path = base + name;
    weights.name = name;
    if (!is_file(weights.path)) {
      fail("checkpoint index '{}': shard '{}' does not exist in '{}'", index_path, printable(name), dir);
    }
    auto file = TensorFile::open(weights.path);
    if (file->format() != "safetensors") {
      fail("model '{}': '{}' is not a safetensors file (it reads as {})", dir, weights.path, file->format());
    }
    weights.bytes = std::filesystem::file_size(weights.path);
    checkpoint->files_.push_back(std::move(weights));
    checkpoint->tensor_files_.push_back(std::move(file));
  }
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const SourceFile& weights = checkpoint->files_[s];
    const TensorFile& tensor_file = *checkpoint->tensor_files_[s];
    const std::set<std::string>& listed = shards[s].second;
    for (const TensorView& view : tensor_file.tensors()) {
      if (!listed.empty() && !listed.count(view.name)) {
        fail("checkpoint index '{}': tensor '{}' is in '{}' but the index does not put it there", index_path,
             printable(view.name), weights.name);
      }
      const auto [at, inserted] = found.emplace(view.name, std::make_pair(&view, &weights));
      if (!inserted) {
        fail("model '{}': tensor '{}' is in both '{}' and '{}'", dir, printable(view.name), at->second.second->name,
             weights.name);
      }
    }
    for (const std::string& name : listed) {
      if (!tensor_file.find(name)) {
        fail("checkpoint index '{}': tensor '{}' is not in '{}', where the index puts it", index_path, printable(name),
             weights.name);
      }
    }
  }

  // The config's tensors: present, shaped, of a weight dtype.
  std::set<std::string> expected_names;
  for (const auto& [role, layer, name, shape] : expected_weights(config, NamingConvention::hugging_face)) {
    expected_names.insert(name);
    const auto at = found.find(name);
    if (at == found.end()) {
      fail("model '{}': tensor '{}' is missing (expected shape {} from '{}')", dir, name, shape_text(shape),
           config.path);
    }
    const TensorView& view = *at->second.first;
    if (view.shape != shape) {
      fail("model '{}': tensor '{}' in '{}' has shape {}; expected {} from '{}'", dir, name, at->second.second->name,
           view.shape_string(), shape_text(shape), config.path);
    }
    if (view.dtype != DType::f32 && view.dtype != DType::f16 && view.dtype != DType::bf16) {
      fail("model '{}': tensor '{}' in '{}' is {}; weights must be F32, F16 or BF16", dir, name,
           at->second.second->name, dtype_info(view.dtype).safetensors);
    }
    checkpoint->tensors_.emplace(name, &view);
  }
  for (const auto& [name, where] : found) {
    if (expected_names.count(name) || ignorable(name)) continue;
    if (config.tie_word_embeddings && name == "lm_head.weight") {
      const Shape shape{config.vocab_size, config.hidden_size};
      if (where.first->shape == shape) {
        // Tied: the embedding serves, as transformers ties them; said, since every other unused tensor is refused.
        log::warn("model '{}': tie_word_embeddings is true, so tensor 'lm_head.weight' in '{}' is not used (the "
                  "embedding matrix serves as the output layer)",
                  dir, where.second->name);
        continue;
      }
    }
    fail("model '{}': tensor '{}' (shape {}, in '{}') is not part of a {} with this config{}", dir, printable(name),
         where.first->shape_string(), where.second->name, config.architecture,
         config.tie_word_embeddings && name == "lm_head.weight"
             ? fmt::format(" (tied embeddings: expected {} or none)",
                           shape_text({config.vocab_size, config.hidden_size}))
             : "");
  }
  return checkpoint;
}

std::string Checkpoint::weight_dtype() const {
  std::set<std::string> dtypes;
  for (const auto& [name, view] : tensors_) {
    if (view->shape.size() == 2) dtypes.insert(std::string(dtype_name(view->dtype)));
  }
  return dtypes.size() == 1 ? *dtypes.begin() : "mixed";
}

StoredWeight Checkpoint::weight(WeightRole role, int layer) const {
  const TensorView& view = tensor(weight_name(role, layer, NamingConvention::hugging_face));
  StoredWeight out;
  out.name = view.name;
  out.type_id = static_cast<std::uint32_t>(ggml_type_of(view.dtype));
  out.shape = view.shape;
  out.data = view.data;
  out.row_bytes = static_cast<std::uint64_t>(view.shape.back()) * dtype_size(view.dtype);
  return out;
}

const TensorView& Checkpoint::tensor(std::string_view name) const {
  const auto at = tensors_.find(std::string(name));
  if (at == tensors_.end()) throw InternalError(fmt::format("checkpoint: tensor '{}' was not validated", name));
  return *at->second;
}

}  // namespace tqlab
