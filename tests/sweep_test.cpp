// The sweep against a direct computation of every metric from docs/SWEEP.md's
// definitions on small dumps (GQA, causal and bidirectional, both window modes,
// sinks, chunks that do not divide the tokens), plus determinism across thread
// counts and seeds as replicates.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/tensor_file.h"
#include "io_test_util.h"
#include "metrics/attention_reference.h"
#include "metrics/needle.h"
#include "quant/registry.h"
#include "sweep/sweep_item.h"
#include "sweep_test_util.h"

namespace tqlab {
namespace {

using io_test::ScratchDir;
using sweep_test::DumpShape;

// Float sgemm logits against double ones: about 1e-7 relative per logit.
constexpr double kAttentionTolerance = 1e-5;
constexpr double kExactTolerance = 1e-9;

// The dump's tensors as floats, [seq][head][token][dim] in C order.
struct Tensors {
  std::map<std::string, std::vector<float>> by_name;
  explicit Tensors(const std::string& path) {
    const auto file = TensorFile::open(path);
    for (const TensorView& view : file->tensors()) {
      std::vector<float>& values = by_name[view.name];
      values.resize(static_cast<std::size_t>(view.element_count()));
      read_all_floats(view, values.data());
    }
  }
  const float* slab(const std::string& name, int seq, int heads, int head, int tokens, int dim) const {
    return by_name.at(name).data() + (static_cast<std::size_t>(seq) * heads + head) * tokens * dim;
  }
};

bool is_exact(const ExactTokens& exact, int chunk_start, int chunk_tokens, int i, int j) {
  if (chunk_start + j < exact.sink) return true;
  if (exact.window <= 0) return false;
  if (exact.mode == WindowMode::recent) return j <= i && i - j < exact.window;
  return j >= chunk_tokens - exact.window;
}

double numpy_percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double h = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= values.size()) return values[lo];
  return values[lo] + (h - static_cast<double>(lo)) * (values[lo + 1] - values[lo]);
}

struct NaiveRun {
  std::string k, v;
  int window = 0, sink = 0;
};

// Every metric of one run and seed, computed directly; also per layer.
struct NaiveMetrics {
  std::map<std::string, double> run;
  std::map<std::string, std::vector<double>> layer;
};

class NaiveSweep {
 public:
  NaiveSweep(const std::string& path, const DumpShape& shape, const AttentionConfig& attention, std::uint64_t seed)
      : tensors_(path), shape_(shape), attention_(attention), seed_(seed) {}

  NaiveMetrics measure(const NaiveRun& run, const std::vector<NeedleTrial>& trials,
                       const std::vector<double>& margins) const {
    const auto k_quantizer = make_quantizer(run.k);
    const auto v_quantizer = make_quantizer(run.v);
    const ExactTokens exact{run.sink, run.window, attention_.window_mode};
    const int T = shape_.tokens, dk = shape_.key_dim, dv = shape_.value_dim;
    const double scale = attention_.scale ? *attention_.scale : 1.0 / std::sqrt(dk);
    struct Sums {
      double k_error = 0, k_energy = 0, v_error = 0, v_energy = 0, k_nmse = 0, v_nmse = 0, k_cos = 0, v_cos = 0;
      double vectors = 0, queries = 0, outputs = 0;
      double kl = 0, top1 = 0, top5 = 0, cos = 0, out = 0, bias = 0, ms = 0;
      std::vector<double> kls;
      std::map<std::string, double> needle;
      double trials = 0;
    };
    std::vector<Sums> layers(static_cast<std::size_t>(shape_.layers));
    const auto decode = [&](const Quantizer& quantizer, Role role, int layer, int head, const float* x, int dim,
                            const float* replace_row = nullptr, int row = -1) {
      std::vector<float> input(x, x + static_cast<std::size_t>(T) * dim);
      if (replace_row)
        std::copy(replace_row, replace_row + dim, input.begin() + static_cast<std::ptrdiff_t>(row) * dim);
      const QuantContext context{seed_, role, layer, head};
      const EncodedTensor encoded = quantizer.encode(T, dim, input.data(), context);
      std::vector<float> out(input.size());
      quantizer.decode(encoded, context, out.data());
      return out;
    };
    const auto vector_errors = [&](const float* x, const std::vector<float>& y, int dim, double& error, double& energy,
                                   double& nmse, double& cos) {
      for (int t = 0; t < T; ++t) {
        double e = 0, n = 0, c = 0, m = 0;
        for (int d = 0; d < dim; ++d) {
          const double a = x[t * dim + d], b = y[static_cast<std::size_t>(t * dim + d)];
          e += (a - b) * (a - b);
          n += a * a;
          c += a * b;
          m += b * b;
        }
        error += e;
        energy += n;
        nmse += e / n;
        cos += c / std::sqrt(n * m);
      }
    };
    for (int layer = 0; layer < shape_.layers; ++layer) {
      Sums& sums = layers[static_cast<std::size_t>(layer)];
      const std::string prefix = "layers." + std::to_string(layer);
      for (int seq = 0; seq < shape_.seqs; ++seq) {
        for (int head = 0; head < shape_.kv_heads; ++head) {
          const float* k = tensors_.slab(prefix + ".k", seq, shape_.kv_heads, head, T, dk);
          const float* v = tensors_.slab(prefix + ".v", seq, shape_.kv_heads, head, T, dv);
          const std::vector<float> kq = decode(*k_quantizer, Role::key, layer, head, k, dk);
          const std::vector<float> vq = decode(*v_quantizer, Role::value, layer, head, v, dv);
          vector_errors(k, kq, dk, sums.k_error, sums.k_energy, sums.k_nmse, sums.k_cos);
          vector_errors(v, vq, dv, sums.v_error, sums.v_energy, sums.v_nmse, sums.v_cos);
          sums.vectors += T;
          const int group = shape_.q_heads / shape_.kv_heads;
          for (int g = 0; g < group; ++g) {
            const int q_head = head * group + g;
            const float* q = tensors_.slab(prefix + ".q", seq, shape_.q_heads, q_head, T, dk);
            AttentionReferenceInput input{T, dk, dv, q, k, kq.data(), v, vq.data(), attention_.chunk, attention_.causal,
                                          scale, exact};
            for (const ReferenceQueryResult& query : attention_reference(input)) {
              sums.queries += 1;
              sums.kl += query.error.kl;
              sums.kls.push_back(query.error.kl);
              sums.top1 += query.error.top1;
              sums.top5 += query.error.top5;
              sums.cos += query.error.cosine;
              sums.bias += query.error.ip_bias;
              sums.ms += query.error.ip_mean_square;
              if (query.output_error) {
                sums.outputs += 1;
                sums.out += *query.output_error;
              }
            }
            for (const NeedleTrial& trial : trials) {
              if (trial.layer_index != layer || trial.seq != seq || trial.q_head != q_head) continue;
              sums.trials += 1;
              measure_needle_trial(trial, q, k, *k_quantizer, layer, head, scale, exact, margins, sums.needle);
            }
          }
        }
      }
    }
    NaiveMetrics metrics;
    const auto finish = [&](const Sums& s, auto&& put) {
      put("k_rel_mse", s.k_error / s.k_energy);
      put("v_rel_mse", s.v_error / s.v_energy);
      put("k_nmse", s.k_nmse / s.vectors);
      put("v_nmse", s.v_nmse / s.vectors);
      put("k_cos", s.k_cos / s.vectors);
      put("v_cos", s.v_cos / s.vectors);
      put("attn_kl", s.kl / s.queries);
      put("attn_kl_p95", numpy_percentile(s.kls, 0.95));
      put("attn_top1", s.top1 / s.queries);
      put("attn_top5", s.top5 / s.queries);
      put("attn_cos", s.cos / s.queries);
      put("attn_out_rel_err", s.out / s.outputs);
      put("ip_bias", s.bias / s.queries);
      put("ip_rmse", std::sqrt(s.ms / s.queries));
      for (const auto& [name, total] : s.needle) put(name, total / s.trials);
    };
    for (const Sums& s : layers) {
      finish(s, [&](const std::string& name, double value) { metrics.layer[name].push_back(value); });
    }
    Sums total;
    for (const Sums& s : layers) {
      total.k_error += s.k_error;
      total.k_energy += s.k_energy;
      total.v_error += s.v_error;
      total.v_energy += s.v_energy;
      total.k_nmse += s.k_nmse; total.v_nmse += s.v_nmse; total.k_cos += s.k_cos; total.v_cos += s.v_cos;
      total.vectors += s.vectors; total.queries += s.queries; total.outputs += s.outputs; total.kl += s.kl;
      total.top1 += s.top1; total.top5 += s.top5; total.cos += s.cos; total.out += s.out; total.bias += s.bias;
      total.ms += s.ms; total.trials += s.trials;
      total.kls.insert(total.kls.end(), s.kls.begin(), s.kls.end());
      for (const auto& [name, value] : s.needle) total.needle[name] += value;
    }
    finish(total, [&](const std::string& name, double value) { metrics.run[name] = value; });
    return metrics;
  }

 private:
  // The planted needle, straight from its definition.
  void measure_needle_trial(const NeedleTrial& trial, const float* q, const float* k, const Quantizer& quantizer,
                            int layer, int head, double scale, const ExactTokens& exact,
                            const std::vector<double>& margins, std::map<std::string, double>& out) const {
    const int T = shape_.tokens, dk = shape_.key_dim;
    const int chunk_start = trial.query / attention_.chunk * attention_.chunk;
    const int chunk_tokens = std::min(attention_.chunk, T - chunk_start);
    const int i = trial.query - chunk_start, j = trial.key - chunk_start;
    const int keys = attention_.causal ? i + 1 : chunk_tokens;
    const float* query = q + static_cast<std::size_t>(trial.query) * dk;
    const auto logit = [&](const float* key) {
      double sum = 0;
      for (int d = 0; d < dk; ++d) sum += static_cast<double>(query[d]) * key[d];
      return scale * sum;
    };
    double q_norm = 0;
    for (int d = 0; d < dk; ++d) q_norm += static_cast<double>(query[d]) * query[d];
    q_norm = std::sqrt(q_norm);
    for (double margin : margins) {
      double best = -INFINITY;
      for (int x = 0; x < keys; ++x) {
        if (x != j) best = std::max(best, logit(k + static_cast<std::size_t>(chunk_start + x) * dk));
      }
      const double delta = (best + margin - logit(k + static_cast<std::size_t>(trial.key) * dk)) / (scale * q_norm);
      std::vector<float> planted(static_cast<std::size_t>(dk));
      for (int d = 0; d < dk; ++d)
        planted[static_cast<std::size_t>(d)] = static_cast<float>(k[trial.key * dk + d] + delta * query[d] / q_norm);
      std::vector<float> keys_planted(k, k + static_cast<std::size_t>(T) * dk);
      std::copy(planted.begin(), planted.end(), keys_planted.begin() + static_cast<std::ptrdiff_t>(trial.key) * dk);
      const QuantContext context{seed_, Role::key, layer, head};
      const EncodedTensor encoded = quantizer.encode(T, dk, keys_planted.data(), context);
      std::vector<float> decoded(keys_planted.size());
      quantizer.decode(encoded, context, decoded.data());
      std::vector<double> exact_logits(static_cast<std::size_t>(keys)), quantized(static_cast<std::size_t>(keys));
      for (int x = 0; x < keys; ++x) {
        const std::size_t row = static_cast<std::size_t>(chunk_start + x) * dk;
        exact_logits[static_cast<std::size_t>(x)] = logit(keys_planted.data() + row);
        quantized[static_cast<std::size_t>(x)] = is_exact(exact, chunk_start, chunk_tokens, i, x)
                                                     ? exact_logits[static_cast<std::size_t>(x)]
                                                     : logit(decoded.data() + row);
      }
      const auto weight = [&](const std::vector<double>& l) {
        const double top = *std::max_element(l.begin(), l.end());
        double sum = 0;
        for (double value : l) sum += std::exp(value - top);
        return std::exp(l[static_cast<std::size_t>(j)] - top) / sum;
      };
      const bool top1 = std::max_element(quantized.begin(), quantized.end()) - quantized.begin() == j;
      const std::string suffix = fmt::format("@{}", margin);
      out["needle_top1" + suffix] += top1;
      out["needle_weight_ratio" + suffix] += weight(quantized) / weight(exact_logits);
    }
  }

  Tensors tensors_;
  DumpShape shape_;
  AttentionConfig attention_;
  std::uint64_t seed_;
};

struct SweepCase {
  std::string name;
  DumpShape shape;
  AttentionConfig attention;
  std::vector<NaiveRun> runs;
};

class SweepMatchesNaive : public ::testing::TestWithParam<SweepCase> {};

TEST_P(SweepMatchesNaive, EveryMetricOfEveryRunAndLayer) {
  const SweepCase& c = GetParam();
  ScratchDir scratch;
  const std::string data = scratch.file("dump.safetensors");
  sweep_test::write_dump(data, c.shape);
  const std::vector<double> margins{0.5, 2.0};
  nlohmann::json runs = nlohmann::json::array();
  for (const NaiveRun& run : c.runs)
    runs.push_back({{"k", run.k}, {"v", run.v}, {"window", run.window}, {"sink", run.sink}});
  nlohmann::json attention = {{"chunk", c.attention.chunk},
                              {"causal", c.attention.causal},
                              {"window_mode", c.attention.window_mode == WindowMode::recent ? "recent" : "tail"}};
  if (c.attention.scale) attention["scale"] = *c.attention.scale;
  const nlohmann::json config = {
      {"data", {{"path", "dump.safetensors"}}},
      {"runs", runs},
      {"seeds", {3, 11}},
      {"metrics", {{"attention", attention}, {"needle", {{"trials", 24}, {"margins", margins}, {"synth_trials", 0}}}}}};
  const sweep_test::SweepRun sweep = sweep_test::run_config(config, scratch.file("config.json"), 2);
  ASSERT_EQ(sweep.results.runs.size(), c.runs.size());

  int largest_window = 0, largest_sink = 0;
  for (const NaiveRun& run : c.runs) {
    largest_window = std::max(largest_window, run.window);
    largest_sink = std::max(largest_sink, run.sink);
  }
  const std::vector<NeedleTrial> trials =
      plan_needle_trials(*sweep.plan.dump, 24, c.attention, largest_window, largest_sink);
  ASSERT_EQ(sweep.results.needle_trials, 24);

  for (std::size_t seed_index = 0; seed_index < 2; ++seed_index) {
    const NaiveSweep naive(data, c.shape, c.attention, seed_index == 0 ? 3 : 11);
    for (std::size_t r = 0; r < c.runs.size(); ++r) {
      const NaiveMetrics want = naive.measure(c.runs[r], trials, margins);
      const RunResult& got = sweep.results.runs[r];
      std::size_t checked = 0;
      for (const auto& [name, summary] : got.metrics) {
        if (!want.run.count(name)) continue;
        SCOPED_TRACE(c.runs[r].k + " / " + c.runs[r].v + ": " + name + ", seed " + std::to_string(seed_index));
        const double expected = want.run.at(name);
        const double tolerance =
            (name.starts_with("k_") || name.starts_with("v_") ? kExactTolerance : kAttentionTolerance);
        ASSERT_TRUE(summary.per_seed[seed_index].has_value());
        EXPECT_NEAR(*summary.per_seed[seed_index], expected, tolerance * std::max(1e-3, std::abs(expected)));
        ++checked;
        if (seed_index == 1) {
          // Per layer: the seed mean of the per-layer values.
          const NaiveMetrics first = NaiveSweep(data, c.shape, c.attention, 3).measure(c.runs[r], trials, margins);
          for (const auto& [layer_name, values] : got.per_layer) {
            if (layer_name != name) continue;
            for (std::size_t layer = 0; layer < values.size(); ++layer) {
              const double mean = 0.5 * (first.layer.at(name)[layer] + want.layer.at(name)[layer]);
              if (std::isnan(mean)) continue;  // no needle trial in this layer
              ASSERT_TRUE(values[layer].has_value()) << "layer " << layer;
              EXPECT_NEAR(*values[layer], mean, tolerance * std::max(1e-3, std::abs(mean))) << "layer " << layer;
            }
          }
        }
      }
      EXPECT_EQ(checked, want.run.size());
    }
  }
}

AttentionConfig attention(int chunk, bool causal, WindowMode mode, std::optional<double> scale = std::nullopt) {
  AttentionConfig config;
  config.chunk = chunk;
  config.causal = causal;
  config.window_mode = mode;
  config.scale = scale;
  return config;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SweepMatchesNaive,
                         ::testing::Values(SweepCase{"causal_gqa_chunks_recent_window_sinks",
                                                     DumpShape{2, 2, 2, 4, 37, 16, 8},
                                                     attention(16, true, WindowMode::recent),
                                                     {{"tq:b=3", "tq:b=2", 0, 0},
                                                      {"tq:b=2,qjl=prod", "fp8_e4m3", 5, 3},
                                                      {"tq:b=4,block=8", "tq:b=3", 0, 2},
                                                      {"tq:b=1,rot=none", "tq:b=1", 0, 0}}},
                                           SweepCase{
                                               "bidirectional_tail_window_sink_past_chunk",
                                               DumpShape{2, 1, 2, 2, 30, 16, 16},
                                               attention(8, false, WindowMode::tail),
                                               {{"tq:b=3,nc", "tq:b=3", 3, 10}, {"kivi:b=2,group=10", "fp16", 0, 0}}},
                                           SweepCase{"causal_tail_window_numeric_scale",
                                                     DumpShape{1, 2, 1, 3, 41, 8, 8},
                                                     attention(64, true, WindowMode::tail, 0.3),
                                                     {{"tq:b=2", "tq:b=2", 7, 0}, {"fp16", "tq:b=1", 0, 4}}}),
                         [](const ::testing::TestParamInfo<SweepCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tqlab

namespace tqlab {
namespace {

nlohmann::json small_config(const nlohmann::json& seeds) {
  return {{"data", {{"path", "dump.safetensors"}}},
          {"grid",
           {{"k", {"tq:b=3", "tq:b=2,qjl=prod", "kivi:b=2,group=16"}},
            {"v", {"tq:b=2", "fp8_e5m2"}},
            {"window", {0, 4}},
            {"sink", {0, 2}}}},
          {"seeds", seeds},
          {"metrics",
           {{"attention", {{"chunk", 16}}}, {"needle", {{"trials", 16}, {"synth_trials", 3}}}, {"per_head", true}}}};
}

TEST(SweepDeterminism, SameBytesForOneTwoAndFourThreads) {
  io_test::ScratchDir scratch;
  sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{3, 2, 2, 4, 40, 16, 8});
  const nlohmann::json config = small_config({0, 1});
  const std::string one = sweep_test::results_text(sweep_test::run_config(config, scratch.file("c.json"), 1));
  EXPECT_EQ(sweep_test::results_text(sweep_test::run_config(config, scratch.file("c.json"), 2)), one);
  EXPECT_EQ(sweep_test::results_text(sweep_test::run_config(config, scratch.file("c.json"), 4)), one);
}

// The totals are what shards and resumed runs are made of: items measured one
// by one, in any order, and added to totals of their own give the very document
// of a whole sweep.
TEST(SweepTotals, ItemsMeasuredInReverseOrderGiveTheSameDocument) {
  io_test::ScratchDir scratch;
  sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{3, 2, 2, 4, 40, 16, 8});
  sweep_test::SweepRun whole = sweep_test::run_config(small_config({0, 1}), scratch.file("c.json"), 2);
  const SweepPlan& plan = whole.plan;
  const SweepItems items(*plan.dump);
  const RunSeeds run_seeds{static_cast<int>(plan.runs.size()), static_cast<int>(plan.config.seeds.size())};
  const int trials = synthetic_trial_count(plan);
  ASSERT_GT(trials, 0);
  SweepTotals totals = empty_sweep_totals(*plan.dump, items, run_seeds, trials, plan.attention, true);
  for (int index = items.count() - 1; index >= 0; --index) {
    const WorkItem item = items.item(index);
    ASSERT_EQ(items.index(item), index);
    ItemMeasurement measured = measure_item(plan, run_seeds, item);
    const KvLayerShape& shape = plan.dump->layers()[static_cast<std::size_t>(item.layer_index)];
    for (int rs = 0; rs < run_seeds.count(); ++rs) {
      add_kl_values(totals.kl_tails[static_cast<std::size_t>(rs)], item, shape.q_heads / shape.kv_heads,
                    measured.kl[static_cast<std::size_t>(rs)]);
    }
    totals.items[static_cast<std::size_t>(index)] = std::move(measured.totals);
  }
  for (int trial = trials - 1; trial >= 0; --trial) {
    totals.synthetic[static_cast<std::size_t>(trial)] = measure_synthetic_trial(plan, run_seeds, trial);
  }
  const std::string expected = sweep_test::results_text(whole);
  whole.results = summarize_sweep(plan, totals);
  EXPECT_EQ(sweep_test::results_text(whole), expected);
}

TEST(SweepSeeds, EachSeedIsTheSweepOfThatSeedAloneAndTheSummaryIsTheirMeanAndStd) {
  io_test::ScratchDir scratch;
  sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{2, 1, 2, 2, 32, 16, 8});
  const auto both = sweep_test::run_config(small_config({4, 9}), scratch.file("c.json"), 2);
  const auto first = sweep_test::run_config(small_config({4}), scratch.file("c.json"), 2);
  const auto second = sweep_test::run_config(small_config({9}), scratch.file("c.json"), 2);
  int differing = 0;
  for (std::size_t r = 0; r < both.results.runs.size(); ++r) {
    for (std::size_t m = 0; m < both.results.runs[r].metrics.size(); ++m) {
      const auto& [name, summary] = both.results.runs[r].metrics[m];
      const MetricSummary& a = first.results.runs[r].metrics[m].second;
      const MetricSummary& b = second.results.runs[r].metrics[m].second;
      SCOPED_TRACE(name);
      ASSERT_EQ(summary.per_seed.size(), 2u);
      EXPECT_EQ(summary.per_seed[0], a.mean);
      EXPECT_EQ(summary.per_seed[1], b.mean);
      if (!a.mean) continue;
      EXPECT_NEAR(*summary.mean, 0.5 * (*a.mean + *b.mean), 1e-15 * (1 + std::abs(*summary.mean)));
      EXPECT_NEAR(*summary.seed_std, std::abs(*a.mean - *b.mean) / std::sqrt(2.0), 1e-12 * (1 + *summary.seed_std));
      EXPECT_FALSE(first.results.runs[r].metrics[m].second.seed_std.has_value());
      differing += *a.mean != *b.mean;
    }
  }
  EXPECT_GT(differing, 20);  // seeds change the rotations, hence the numbers
}

TEST(SweepSyntheticNeedleSlow, ReproducesThePublishedReproduction) {
  // The numpy reproduction, d = 128, 40 trials: exact needle weight ~0.74; biased MSE b=3 0.66 / 0.13,
  // debiased b=3 0.71 / 0.094, b=4 0.72 / 0.046 (weight / output error).
  constexpr int kTrials = 40;
  const std::vector<std::string> specs{"fp32", "tq:b=3,rot=haar", "tq:b=3,rot=haar,debias", "tq:b=4,rot=haar"};
  std::map<std::string, std::pair<double, double>> means;
  for (int trial = 0; trial < kTrials; ++trial) {
    const SyntheticNeedle needle = make_synthetic_needle(trial);
    for (const std::string& spec : specs) {
      const auto [weight, error] = measure_synthetic_needle(needle, *make_quantizer(spec), 0, trial);
      means[spec].first += weight / kTrials;
      means[spec].second += error / kTrials;
    }
  }
  const auto measure = [&](const std::string& spec) { return means.at(spec); };
  const auto [exact_weight, exact_error] = measure("fp32");
  EXPECT_NEAR(exact_weight, 0.74, 0.03);
  EXPECT_EQ(exact_error, 0.0);
  const auto [biased_weight, biased_error] = measure("tq:b=3,rot=haar");
  EXPECT_NEAR(biased_weight, 0.66, 0.03);
  EXPECT_NEAR(biased_error, 0.13, 0.03);
  const auto [debiased_weight, debiased_error] = measure("tq:b=3,rot=haar,debias");
  EXPECT_NEAR(debiased_weight, 0.71, 0.03);
  EXPECT_NEAR(debiased_error, 0.094, 0.025);
  const auto [b4_weight, b4_error] = measure("tq:b=4,rot=haar");
  EXPECT_NEAR(b4_weight, 0.72, 0.03);
  EXPECT_NEAR(b4_error, 0.046, 0.015);
}

TEST(NeedleTrials, KeysLieBeforeTheQueryInItsChunkOutsideEveryWindowAndSink) {
  io_test::ScratchDir scratch;
  sweep_test::write_dump(scratch.file("dump.safetensors"), DumpShape{3, 2, 2, 4, 50, 8, 8});
  const auto file = TensorFile::open(scratch.file("dump.safetensors"));
  const KvDump dump(*file, KvDumpSpec{"layers.{layer}.k", "layers.{layer}.v", "layers.{layer}.q", true,
                                      "seq head token dim", std::nullopt});
  for (WindowMode mode : {WindowMode::recent, WindowMode::tail}) {
    AttentionConfig attention;
    attention.chunk = 16;
    attention.window_mode = mode;
    const std::vector<NeedleTrial> trials = plan_needle_trials(dump, 500, attention, 4, 3);
    ASSERT_EQ(trials.size(), 500u);
    std::map<int, int> layers;
    for (const NeedleTrial& trial : trials) {
      const int start = trial.query / 16 * 16;
      const int length = std::min(16, 50 - start);
      EXPECT_LT(trial.key, trial.query);
      EXPECT_GE(trial.key, start);
      EXPECT_GE(trial.key, 3);
      if (mode == WindowMode::recent) EXPECT_GE(trial.query - trial.key, 4);
      else EXPECT_LT(trial.key - start, length - 4);
      ++layers[trial.layer_index];
    }
    EXPECT_EQ(layers.size(), 3u);  // every layer is picked
  }
  // No room at all: no trials, no hang.
  AttentionConfig tiny;
  tiny.chunk = 4;
  EXPECT_TRUE(plan_needle_trials(dump, 10, tiny, 4, 0).empty());
}

}  // namespace
}  // namespace tqlab
