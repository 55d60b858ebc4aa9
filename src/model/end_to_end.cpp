#include "model/end_to_end.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "model/chunking.h"

namespace tqlab {
namespace {

// Scored tokens per block of logits: two blocks of rows x vocab floats stay within about 64 MiB
// (150 k vocabulary: 48 rows), at most 256 rows. Fixed by the vocabulary, never by the thread count.
int logit_rows_for(int vocab) {
  constexpr std::int64_t kBlockFloats = 8 * 1024 * 1024;  // 32 MiB per block
  const std::int64_t rows = std::clamp<std::int64_t>(kBlockFloats / vocab, 16, 256);
  return static_cast<int>(rows / 8 * 8);
}

[[noreturn]] void nonfinite(const std::string& model, int chunk, int position) {
  fail("model '{}': the logits at chunk {}, position {} are not finite (NaN or Inf): the weights hold NaN/Inf "
       "values, or the activations overflow float32",
       model, chunk, position);
}

}  // namespace

int first_scored_position(int ctx, Scoring scoring) { return scoring == Scoring::second_half ? ctx / 2 : 0; }

int scored_per_chunk(int ctx, Scoring scoring) { return ctx - 1 - first_scored_position(ctx, scoring); }

EndToEndSession::EndToEndSession(const Transformer& model, std::vector<std::int32_t> tokens,
                                 const EndToEndOptions& options, std::string tokens_name)
    : model_(&model),
      tokens_(std::move(tokens)),
      options_(options),
      tokens_name_(std::move(tokens_name)),
      workers_(options.threads) {
  const ModelConfig& config = model.config();
  const int ctx = options_.ctx;
  chunks_ = plan_chunks(config, tokens_.size(), tokens_name_, ctx, options_.chunks, options_.bos, 2, options_.names);
  first_scored_ = first_scored_position(ctx, options_.scoring);
  logit_rows_ = logit_rows_for(config.vocab_size);

  // The base pass: final hidden states of the scored positions, and their negative log-likelihoods.
  const int hidden = config.hidden_size;
  const int outputs = ctx - first_scored_;
  std::vector<float> out(static_cast<std::size_t>(outputs) * hidden);
  base_logits_.resize(static_cast<std::size_t>(logit_rows_) * config.vocab_size);
  run_logits_.resize(base_logits_.size());
  std::vector<double> scratch;
  if (options_.keep_layer_inputs) layer_inputs_.resize(static_cast<std::size_t>(chunks_) * config.layers);
  for (int chunk = 0; chunk < chunks_; ++chunk) {
    const std::vector<std::int32_t> ids = chunk_tokens(chunk);
    ForwardOptions forward_options;
    forward_options.first_output = first_scored_;
    if (options_.keep_layer_inputs) {
      forward_options.on_layer_input = [&](int layer, const float* x) {
        if (layer == 0) return;  // the embedding: a start there is a whole forward
        const auto count = static_cast<std::size_t>(ctx) * hidden;
        layer_inputs_[static_cast<std::size_t>(chunk) * config.layers + layer].assign(x, x + count);
      };
    }
    forward(model, ids, forward_options, workspace_, workers_, out.data());
    const int scored = scored_per_chunk();
    base_hidden_.emplace_back(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(scored) * hidden);
    for (int first = 0; first < scored; first += logit_rows_) {
      const int rows = std::min(logit_rows_, scored - first);
      output_logits(model, rows, base_hidden_.back().data() + static_cast<std::ptrdiff_t>(first) * hidden,
                    base_logits_.data(), workers_);
      for (int r = 0; r < rows; ++r) {
        const int position = first_scored_ + first + r;
        const NextTokenDistribution next = next_token_distribution(
            config.vocab_size, base_logits_.data() + static_cast<std::ptrdiff_t>(r) * config.vocab_size,
            ids[static_cast<std::size_t>(position + 1)], scratch);
        if (!next.finite) nonfinite(model.source().path(), options_.first_chunk + chunk, position);
        base_.nll.push_back(next.nll);
      }
    }
    if (options_.on_chunk) options_.on_chunk(chunk + 1, chunks_, ctx);
  }
  base_.perplexity = perplexity(base_.nll);
}

std::vector<std::int32_t> EndToEndSession::chunk_tokens(int chunk) const {
  const auto start = tokens_.begin() + static_cast<std::ptrdiff_t>(chunk) * options_.ctx;
  std::vector<std::int32_t> ids(start, start + options_.ctx);
  if (options_.bos) ids[0] = static_cast<std::int32_t>(*model_->config().bos_token_id);
  return ids;
}

RunSeedResult EndToEndSession::run(const KvCacheQuantization& cache, int first_layer) {
  const ModelConfig& config = model_->config();
  if (first_layer < 0 || first_layer >= config.layers || (first_layer > 0 && layer_inputs_.empty())) {
    throw InternalError(fmt::format("EndToEndSession::run: first_layer {} of {} layers{}", first_layer, config.layers,
                                    layer_inputs_.empty() ? " without keep_layer_inputs" : ""));
  }
  for (int layer = 0; layer < first_layer; ++layer) {
    if (cache.engine_of(layer) != nullptr) {
      throw InternalError(fmt::format(
          "EndToEndSession::run: layer {} is under an engine but the run starts at layer {}", layer, first_layer));
    }
    for (const auto* role : {&cache.key, &cache.value}) {
      for (const Quantizer* quantizer : (*role)[static_cast<std::size_t>(layer)]) {
        if (quantizer->spec() != "fp32") {
          throw InternalError(fmt::format("EndToEndSession::run: layer {} is quantized ({}) but the run starts at "
                                          "layer {}",
                                          layer, quantizer->spec(), first_layer));
        }
      }
    }
  }
  RunSeedResult result;
  const auto layers = static_cast<std::size_t>(config.layers);
  result.bytes.key.assign(layers, 0);
  result.bytes.value = result.bytes.key_values = result.bytes.value_values = result.bytes.key;
  std::vector<float> out(static_cast<std::size_t>(options_.ctx - first_scored_) * config.hidden_size);
  for (int chunk = 0; chunk < chunks_; ++chunk) {
    const std::vector<std::int32_t> ids = chunk_tokens(chunk);
    ForwardOptions forward_options;
    forward_options.first_output = first_scored_;
    forward_options.cache = &cache;
    forward_options.bytes = &result.bytes;
    forward_options.where =
        fmt::format("model '{}', chunk {}", model_->source().path(), options_.first_chunk + chunk);
    if (first_layer > 0) {
      forward_options.first_layer = first_layer;
      forward_options.first_input =
          layer_inputs_[static_cast<std::size_t>(chunk) * config.layers + static_cast<std::size_t>(first_layer)].data();
    }
    forward(*model_, ids, forward_options, workspace_, workers_, out.data());
    compare_chunk(chunk, out.data(), result.series);
    if (options_.on_chunk) options_.on_chunk(chunk + 1, chunks_, options_.ctx);
  }
  return result;
}

void EndToEndSession::compare_chunk(int chunk, const float* hidden, NextTokenSeries& series) {
  const ModelConfig& config = model_->config();
  const int vocab = config.vocab_size;
  const int scored = scored_per_chunk();
  const std::vector<std::int32_t> ids = chunk_tokens(chunk);
  const float* base_hidden = base_hidden_[static_cast<std::size_t>(chunk)].data();
  std::vector<NextTokenComparison> block(static_cast<std::size_t>(logit_rows_));
  for (int first = 0; first < scored; first += logit_rows_) {
    const int rows = std::min(logit_rows_, scored - first);
    const std::ptrdiff_t offset = static_cast<std::ptrdiff_t>(first) * config.hidden_size;
    output_logits(*model_, rows, base_hidden + offset, base_logits_.data(), workers_);
    output_logits(*model_, rows, hidden + offset, run_logits_.data(), workers_);
    workers_.run(static_cast<std::size_t>(rows), [&](std::size_t r, int worker) {
      const int position = first_scored_ + first + static_cast<int>(r);
      const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(r) * vocab;
      block[r] = compare_next_token(vocab, base_logits_.data() + at, run_logits_.data() + at,
                                    ids[static_cast<std::size_t>(position + 1)], workers_.doubles(worker));
    });
    for (int r = 0; r < rows; ++r) {
      if (!block[static_cast<std::size_t>(r)].finite)
        nonfinite(model_->source().path(), options_.first_chunk + chunk, first_scored_ + first + r);
      series.add(block[static_cast<std::size_t>(r)]);
    }
  }
}

}  // namespace tqlab
