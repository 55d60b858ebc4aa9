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

// Shard files by name, each with the tensor names an index puts there (an empty set: the whole file).
using ShardList = std::vector<std::pair<std::string, std::set<std::string>>>;

// Every tensor of every shard, by name: its view and the file holding it.
using FoundTensors = std::map<std::string, std::pair<const TensorView*, const SourceFile*>>;

// The shard files of an index, in first-mention order, each with the tensors the index puts there.
ShardList read_index(const std::string& path) {
  const nlohmann::json document = read_json_file(path, "checkpoint index");
  const JsonReader root(document, path, "", "checkpoint index");
  ShardList shards;
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

// The path of DIR's config.json (`base` is DIR with a trailing separator), once DIR is a folder and
// config.json a regular file in it.
std::string config_path_in(const std::string& dir, const std::string& base) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    fail("model '{}': not a folder (expected a Hugging Face checkpoint folder with config.json and "
         "model.safetensors)",
         dir);
  }
  const std::string config_path = base + "config.json";
  if (struct stat info {}; ::stat(config_path.c_str(), &info) != 0) {
    // Absent is the common case; a folder tqlab may not search, or a link that loops, says so instead.
    if (errno == ENOENT) fail("model '{}': no config.json in the folder", dir);
    fail("model '{}': cannot read config.json: {}", dir, std::strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    fail("model '{}': config.json is not a regular file", dir);
  }
  return config_path;
}

// Which files hold which tensors: model.safetensors alone, or the shards of the index (whose path goes
// to `index_path`; left empty for a single file).
ShardList list_shards(const std::string& dir, const std::string& base, std::string& index_path) {
  const std::string single = base + "model.safetensors";
  const std::string index = base + "model.safetensors.index.json";
  if (is_file(single)) return {{"model.safetensors", {}}};
  if (is_file(index)) {
    index_path = index;
    return read_index(index);
  }
  const bool torch_bin = is_file(base + "pytorch_model.bin") || is_file(base + "pytorch_model.bin.index.json");
  fail("model '{}': no model.safetensors or model.safetensors.index.json{}", dir,
       torch_bin ? " (pytorch_model.bin is a pickle, which tqlab does not read: convert it to safetensors)" : "");
}

// Opens every shard as a safetensors file, appending it to `files` and `tensor_files` (parallel, in
// shard order).
void open_shards(const std::string& dir, const std::string& base, const std::string& index_path,
                 const ShardList& shards, std::vector<SourceFile>& files,
                 std::vector<std::unique_ptr<TensorFile>>& tensor_files) {
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
    files.push_back(std::move(weights));
    tensor_files.push_back(std::move(file));
  }
}

// Every tensor of every opened shard, by name, once each is where the index puts it (if there is an
// index) and in only one file.
FoundTensors find_tensors(const std::string& dir, const std::string& index_path, const ShardList& shards,
                          const std::vector<SourceFile>& files,
                          const std::vector<std::unique_ptr<TensorFile>>& tensor_files) {
  FoundTensors found;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const SourceFile& weights = files[s];
    const TensorFile& tensor_file = *tensor_files[s];
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
  return found;
}

// The config's tensors, put into `tensors` once each is present, shaped, and of a weight dtype; returns
// their names.
std::set<std::string> take_expected(const std::string& dir, const ModelConfig& config, const FoundTensors& found,
                                    std::unordered_map<std::string, const TensorView*>& tensors) {
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
    tensors.emplace(name, &view);
  }
  return expected_names;
}

// Refuses every found tensor the config does not imply, except those transformers ignores: RoPE's saved
// frequencies, and a tied lm_head.weight of the embedding's shape (warned about).
void refuse_unexpected(const std::string& dir, const ModelConfig& config, const FoundTensors& found,
                       const std::set<std::string>& expected_names) {
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
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir) {
  auto checkpoint = std::unique_ptr<Checkpoint>(new Checkpoint());
  checkpoint->dir_ = dir;
  const std::string base = (std::filesystem::path(dir) / "").string();
  checkpoint->config_ = read_model_config(config_path_in(dir, base));
  const ModelConfig& config = checkpoint->config_;

  std::string index_path;  // empty for a single model.safetensors
  const ShardList shards = list_shards(dir, base, index_path);
  open_shards(dir, base, index_path, shards, checkpoint->files_, checkpoint->tensor_files_);
  // files_ is complete: the pointers into it that `found` keeps stay valid.
  const FoundTensors found = find_tensors(dir, index_path, shards, checkpoint->files_, checkpoint->tensor_files_);

  const std::set<std::string> expected_names = take_expected(dir, config, found, checkpoint->tensors_);
  refuse_unexpected(dir, config, found, expected_names);
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
