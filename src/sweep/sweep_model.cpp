#include "sweep/sweep_model.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"
#include "core/stop_signals.h"
#include "io/tensor_file.h"
#include "metrics/next_token_metrics.h"
#include "model/kv_dump_writer.h"

namespace tqlab {
namespace {

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
    removed_on_stop_.emplace(path_);  // gigabytes for a real model: gone on SIGINT/SIGTERM too
  }
  ~TemporaryPath() { std::filesystem::remove(path_); }
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<RemovedOnStop> removed_on_stop_;
};

}  // namespace

std::unique_ptr<SweepModel> open_sweep_model(const SweepConfig& config) {
  const SweepModelConfig& block = *config.model;
  auto model = std::make_unique<SweepModel>();
  model->source = open_weight_source(block.resolved_path);
  model->transformer = std::make_unique<Transformer>(*model->source);
  const ModelConfig& model_config = model->source->config();
  // How the user named the options: tqlab ppl's flags, or a config's model block.
  const std::string prefix = block.from_flags ? "--" : "model.";
  const std::string tokens_option = prefix + (block.text.empty() ? "tokens" : "text");
  if (!block.text.empty()) {
    const std::string tokenizer = block.tokenizer.empty() ? block.resolved_path : block.resolved_tokenizer;
    model->tokens = tokenize_model_text(block.resolved_text, tokenizer, block.add_special, model_config, tokens_option,
                                        ids_for_chunks(block.ctx, block.chunks));
  } else {
    model->tokens = read_model_tokens(block.resolved_tokens, model_config, tokens_option);
  }
  EndToEndOptions& options = model->options;
  options.ctx = block.ctx;
  options.chunks = block.chunks;
  options.scoring = block.score;
  options.bos = block.bos;
  options.names = {prefix + "ctx", prefix + "chunks", tokens_option, prefix + "bos"};
  model->chunks = plan_chunks(model_config, model->tokens.ids.size(), model->tokens.path, options.ctx, options.chunks,
                              options.bos, 2, options.names);
  const WindowMode mode = config.metrics.attention_options.window_mode;
  for (const SweepRunConfig& run : config.runs) {
    model->runs.push_back(plan_kv_cache(model_config, run.k, run.v, ExactTokens{run.sink, run.window, mode}, run.engine,
                                        run.prefill.value_or(PrefillRule{}), run.origin));
  }
  model->identity = model_identity(*model->source, block.path);
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

EndToEndTotals empty_end_to_end_totals(const SweepModel& model, int run_seeds) {
  EndToEndTotals totals;
  totals.chunks = model.chunks;
  totals.scored_per_chunk = scored_per_chunk(model.options.ctx, model.options.scoring);
  totals.base_nll.resize(static_cast<std::size_t>(model.chunks));
  totals.runs.resize(static_cast<std::size_t>(run_seeds) * static_cast<std::size_t>(model.chunks));
  return totals;
}

SweepEndToEnd assemble_end_to_end(const EndToEndTotals& totals) {
  const auto missing = [] { return InternalError("assemble_end_to_end: an end-to-end unit is missing"); };
  SweepEndToEnd out;
  for (const std::optional<std::vector<double>>& nll : totals.base_nll) {
    if (!nll) throw missing();
    out.base.nll.insert(out.base.nll.end(), nll->begin(), nll->end());
  }
  out.base.perplexity = perplexity(out.base.nll);
  out.scored_tokens = static_cast<std::int64_t>(out.base.nll.size());
  const auto chunks = static_cast<std::size_t>(totals.chunks);
  for (std::size_t first = 0; first < totals.runs.size(); first += chunks) {
    RunSeedResult& run_seed = out.run_seeds.emplace_back();
    for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
      const std::optional<RunSeedResult>& part = totals.runs[first + chunk];
      if (!part) throw missing();
      NextTokenSeries& series = run_seed.series;
      for (auto member : {&NextTokenSeries::nll_base, &NextTokenSeries::nll, &NextTokenSeries::kld,
                          &NextTokenSeries::p_base, &NextTokenSeries::p, &NextTokenSeries::same_top1}) {
        (series.*member).insert((series.*member).end(), (part->series.*member).begin(), (part->series.*member).end());
      }
      KvCacheBytes& bytes = run_seed.bytes;
      for (auto member :
           {&KvCacheBytes::key, &KvCacheBytes::value, &KvCacheBytes::key_values, &KvCacheBytes::value_values}) {
        std::vector<std::uint64_t>& sum = bytes.*member;
        const std::vector<std::uint64_t>& add = part->bytes.*member;
        if (sum.empty()) sum.assign(add.size(), 0);
        for (std::size_t i = 0; i < add.size() && i < sum.size(); ++i) sum[i] += add[i];
      }
      for (auto member : {&KvCacheBytes::key_head, &KvCacheBytes::value_head}) {
        std::vector<std::vector<std::uint64_t>>& sum = bytes.*member;
        const std::vector<std::vector<std::uint64_t>>& add = part->bytes.*member;
        if (sum.size() < add.size()) sum.resize(add.size());
        for (std::size_t layer = 0; layer < add.size(); ++layer) {
          if (sum[layer].size() < add[layer].size()) sum[layer].resize(add[layer].size(), 0);
          for (std::size_t head = 0; head < add[layer].size(); ++head) sum[layer][head] += add[layer][head];
        }
      }
    }
  }
  return out;
}

std::unique_ptr<EndToEndSession> chunk_session(const SweepModel& model, int chunk, int threads) {
  const auto ctx = static_cast<std::size_t>(model.options.ctx);
  const auto first = model.tokens.ids.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(chunk) * ctx);
  std::vector<std::int32_t> ids(first, first + static_cast<std::ptrdiff_t>(ctx));
  EndToEndOptions options = model.options;
  options.chunks = 1;
  options.first_chunk = chunk;
  options.threads = threads;
  return std::make_unique<EndToEndSession>(*model.transformer, std::move(ids), options, model.tokens.path);
}

}  // namespace tqlab
