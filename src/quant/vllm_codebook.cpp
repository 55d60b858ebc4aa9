// vLLM's Lloyd–Max solver, step by step as vllm_codebook.h states it. The
// arithmetic is written in the order vLLM's Python evaluates it, in double,
// so that the float levels are the ones vLLM's cache uses.
#include "quant/vllm_codebook.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <utility>

#include "core/error.h"

namespace tqlab {
namespace {

constexpr int kMaxRounds = 200;
constexpr double kTolerance = 1e-10;
constexpr int kPanels = 200;
constexpr double kStartSpan = 3.5;    // the start levels span ±3.5σ
constexpr double kOuterFactor = 3.0;  // the outer cells end at 3 × ±3.5σ

// The trapezoid rule on kPanels panels, summed left to right as vLLM's _trapz does.
template <typename F>
double trapezoid(F f, double a, double b) {
  const double h = (b - a) / kPanels;
  double sum = 0.5 * (f(a) + f(b));
  for (int i = 1; i < kPanels; ++i) sum += f(a + i * h);
  return sum * h;
}

}  // namespace

VllmCodebook solve_vllm_codebook(int d, int bits) {
  if (d < 1 || bits < 1 || bits > 8) throw InternalError(fmt::format("vLLM codebook for d={}, bits={}", d, bits));
  const int count = 1 << bits;
  const double variance = 1.0 / d;
  const double sigma = std::sqrt(variance);
  const double density_factor = 1.0 / std::sqrt(2 * std::numbers::pi * variance);
  const auto pdf = [&](double x) { return density_factor * std::exp(-x * x / (2 * variance)); };
  const auto x_pdf = [&](double x) { return x * pdf(x); };

  const double lo = -kStartSpan * sigma;
  const double hi = kStartSpan * sigma;
  std::vector<double> levels(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) levels[static_cast<std::size_t>(i)] = lo + (hi - lo) * (i + 0.5) / count;

  std::vector<double> edges(static_cast<std::size_t>(count) + 1);
  std::vector<double> next(static_cast<std::size_t>(count));
  for (int round = 0; round < kMaxRounds; ++round) {
    edges.front() = lo * kOuterFactor;
    edges.back() = hi * kOuterFactor;
    for (int i = 0; i + 1 < count; ++i) {
      edges[static_cast<std::size_t>(i) + 1] = (levels[static_cast<std::size_t>(i)] +
                                                levels[static_cast<std::size_t>(i) + 1]) / 2.0;
    }
    double largest_move = 0.0;
    for (std::size_t i = 0; i < levels.size(); ++i) {
      const double numerator = trapezoid(x_pdf, edges[i], edges[i + 1]);
      const double denominator = trapezoid(pdf, edges[i], edges[i + 1]);
      next[i] = denominator > 1e-15 ? numerator / denominator : levels[i];
      largest_move = std::max(largest_move, std::fabs(next[i] - levels[i]));
    }
    // vLLM breaks before adopting the converged round's levels.
    if (largest_move < kTolerance) break;
    levels.swap(next);
  }

  VllmCodebook codebook;
  for (double level : levels) codebook.levels.push_back(static_cast<float>(level));
  for (std::size_t i = 0; i + 1 < codebook.levels.size(); ++i) {
    codebook.midpoints.push_back((codebook.levels[i] + codebook.levels[i + 1]) / 2.0f);
  }
  return codebook;
}

const VllmCodebook& vllm_codebook(int d, int bits) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::unique_ptr<const VllmCodebook>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[{d, bits}];
  // Solving takes a few milliseconds; every head of every layer shares the result.
  if (!slot) slot = std::make_unique<const VllmCodebook>(solve_vllm_codebook(d, bits));
  return *slot;
}

}  // namespace tqlab
