#include "sweep/sweep_model.h"

#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"
#include "io/tensor_file.h"
#include "model/kv_dump_writer.h"

namespace tqlab {
namespace {

Scoring parse_scoring(const std::string& name) { return name == "all" ? Scoring::all : Scoring::second_half; }

// A temporary file's name, removed when the guard goes (unless released).
class TemporaryPath {
 public:
  explicit TemporaryPath(const std::string& stem) {
    std::string pattern = (std::filesystem::temp_directory_path() / (stem + "-XXXXXX.safetensors")).string();
    const int fd = ::mkstemps(pattern.data(), static_cast<int>(std::string_view(".safetensors").size()));
    if (fd < 0) {
      fail("cannot make a temporary file in '{}' for the model's dump: {} (set TMPDIR to a writable folder)",
           std::filesystem::temp_directory_path().string(), std::strerror(errno));
    }
    ::close(fd);
    path_ = pattern;
  }
  ~TemporaryPath() { std::filesystem::remove(path_); }
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<SweepModel> open_sweep_model(const SweepConfig& config) {
  const SweepModelConfig& block = *config.model;
  auto model = std::make_unique<SweepModel>();
  model->checkpoint = Checkpoint::open(block.resolved_path);
  model->transformer = std::make_unique<Transformer>(*model->checkpoint);
  const ModelConfig& model_config = model->checkpoint->config();
  // How the user named the options: tqlab ppl's flags, or a config's model block.
  const std::string prefix = block.from_flags ? "--" : "model.";
  const std::string tokens_option = prefix + (block.text.empty() ? "tokens" : "text");
  if (!block.text.empty()) {
    const std::string tokenizer = block.tokenizer.empty() ? block.resolved_path : block.resolved_tokenizer;
    model->tokens = tokenize_model_text(block.resolved_text, tokenizer, block.add_special, model_config, tokens_option);
  } else {
    model->tokens = read_model_tokens(block.resolved_tokens, model_config, tokens_option);
  }
  EndToEndOptions& options = model->options;
  options.ctx = block.ctx;
  options.chunks = block.chunks;
  options.scoring = parse_scoring(block.score);
  options.bos = block.bos;
  options.names = {prefix + "ctx", prefix + "chunks", tokens_option, prefix + "bos"};
  model->chunks = plan_chunks(model_config, model->tokens.ids.size(), model->tokens.path, options.ctx, options.chunks,
                              options.bos, 2, options.names);
  const WindowMode mode = config.metrics.attention_options.window_mode;
  for (const SweepRunConfig& run : config.runs) {
    model->runs.push_back(plan_kv_cache(model_config, run.k, run.v, ExactTokens{run.sink, run.window, mode}));
  }
  model->identity = model_identity(*model->checkpoint, block.path);
  return model;
}

std::unique_ptr<TensorFile> model_kv_dump(const SweepModel& model, int threads, std::uint64_t& identity_bytes,
                                          std::string& identity_sha256) {
  const TemporaryPath temporary("tqlab-model-dump");
  KvDumpWriteOptions write;
  write.ctx = model.options.ctx;
  write.chunks = model.chunks;
  write.bos = model.options.bos;
  write.dtype = DType::f32;
  write.threads = threads;
  write.model_path = model.identity.path;
  write.tokens_path = model.tokens.path;
  write.tokens_sha256 = model.tokens.sha256;
  write.tokenizer_sha256 = model.tokens.tokenizer_sha256;
  write.names = model.options.names;
  write_model_kv_dump(*model.transformer, model.tokens.ids, temporary.path(), write);
  std::unique_ptr<TensorFile> file = TensorFile::open(temporary.path());
  identity_bytes = std::filesystem::file_size(temporary.path());
  identity_sha256 = file_sha256(temporary.path());
  return file;  // the file's name goes with `temporary`; its map stays readable
}

SweepEndToEnd run_sweep_end_to_end(SweepModel& model, const std::vector<std::uint64_t>& seeds, int threads,
                                   const std::function<void(int pass, int passes, int chunk, int chunks)>& on_pass) {
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const int passes = 1 + static_cast<int>(model.runs.size() * seeds.size());
  int pass = 0;
  EndToEndOptions options = model.options;
  options.threads = threads;
  options.on_chunk = [&](int done, int total, int) {
    if (on_pass) on_pass(pass, passes, done, total);
  };
  SweepEndToEnd out;
  auto start = Clock::now();
  EndToEndSession session(*model.transformer, model.tokens.ids, options, model.tokens.path);
  out.base = session.base();
  out.scored_tokens = session.scored_tokens();
  out.base_seconds = since(start);
  start = Clock::now();
  for (KvCachePlan& run : model.runs) {
    for (std::uint64_t seed : seeds) {
      ++pass;
      run.cache.seed = seed;
      out.run_seeds.push_back(session.run(run.cache));
    }
  }
  out.runs_seconds = since(start);
  return out;
}

}  // namespace tqlab
