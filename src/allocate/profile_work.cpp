#include "allocate/profile_work.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/index.h"
#include "model/model_config.h"

namespace tqlab {
namespace {

// (unit, candidate, seed) of a model pass.
ProfileCell model_pass_cell(const Profile& skeleton, int work) {
  const auto seeds = static_cast<int>(skeleton.seeds.size());
  const auto candidates = static_cast<int>(skeleton.candidates.size());
  return {work / (seeds * candidates), work / seeds % candidates, work % seeds};
}

}  // namespace

OfflineRuns offline_profile_runs(const std::vector<std::string>& candidates) {
  OfflineRuns out;
  const auto add_run = [&](const std::string& k, const std::string& v) {
    const std::pair<std::string, std::string> run{k, v};
    const auto found = std::find(out.runs.begin(), out.runs.end(), run);
    if (found != out.runs.end()) return static_cast<int>(found - out.runs.begin());
    out.runs.push_back(run);
    return static_cast<int>(out.runs.size()) - 1;
  };
  for (const std::string& candidate : candidates) {
    out.key_run.push_back(add_run(candidate, kOfflineExactSpec));
    out.value_run.push_back(add_run(kOfflineExactSpec, candidate));
  }
  return out;
}

int profile_work_count(const Profile& skeleton) {
  if (skeleton.kind == ProfileKind::offline) {
    return static_cast<int>(offline_profile_runs(skeleton.candidates).runs.size());
  }
  return static_cast<int>(skeleton.units.size() * skeleton.candidates.size() * skeleton.seeds.size());
}

std::vector<ProfileCell> profile_work_cells(const Profile& skeleton, int work) {
  if (work < 0 || work >= profile_work_count(skeleton)) {
    throw InternalError(fmt::format("profile_work_cells: work unit {} of {}", work, profile_work_count(skeleton)));
  }
  if (skeleton.kind == ProfileKind::model) return {model_pass_cell(skeleton, work)};
  const OfflineRuns runs = offline_profile_runs(skeleton.candidates);
  std::vector<ProfileCell> cells;
  for (std::size_t u = 0; u < skeleton.units.size(); ++u) {
    const bool keys = skeleton.units[u].unit.role == Role::key;
    for (std::size_t c = 0; c < skeleton.candidates.size(); ++c) {
      if (at(keys ? runs.key_run : runs.value_run, c) != work) continue;
      for (std::size_t s = 0; s < skeleton.seeds.size(); ++s) {
        cells.push_back({static_cast<int>(u), static_cast<int>(c), static_cast<int>(s)});
      }
    }
  }
  return cells;
}

std::vector<std::uint64_t> offline_work_costs(const Profile& skeleton) {
  return std::vector<std::uint64_t>(static_cast<std::size_t>(profile_work_count(skeleton)), 1);
}

std::vector<std::uint64_t> model_work_costs(const Profile& skeleton, const ModelConfig& model, int ctx, int chunks) {
  const auto tokens = static_cast<std::uint64_t>(ctx);
  const auto hidden = static_cast<std::uint64_t>(model.hidden_size);
  const auto head_dim = static_cast<std::uint64_t>(model.head_dim);
  const auto q_heads = static_cast<std::uint64_t>(model.q_heads);
  const std::uint64_t per_token_layer = hidden * (q_heads + 2 * static_cast<std::uint64_t>(model.kv_heads)) * head_dim +
                                        q_heads * head_dim * hidden +
                                        3 * hidden * static_cast<std::uint64_t>(model.intermediate_size);
  const std::uint64_t layer = tokens * per_token_layer + q_heads * head_dim * tokens * (tokens + 1);
  const std::uint64_t logits = tokens * hidden * static_cast<std::uint64_t>(model.vocab_size);
  std::vector<std::uint64_t> costs;
  for (int work = 0; work < profile_work_count(skeleton); ++work) {
    const ProfileCell cell = model_pass_cell(skeleton, work);
    const int first = skeleton.units.at(static_cast<std::size_t>(cell.unit)).unit.layer;
    const auto layers = static_cast<std::uint64_t>(std::max(1, model.layers - first));
    costs.push_back(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(chunks) * (layers * layer + logits)));
  }
  return costs;
}

std::string describe_profile_work(const Profile& skeleton, int work) {
  if (skeleton.kind == ProfileKind::model) {
    const ProfileCell cell = model_pass_cell(skeleton, work);
    return fmt::format("pass {} ({} at {}, seed {})", work,
                       skeleton.units.at(static_cast<std::size_t>(cell.unit)).unit.name(),
                       at(skeleton.candidates, cell.candidate), at(skeleton.seeds, cell.seed));
  }
  const OfflineRuns runs = offline_profile_runs(skeleton.candidates);
  const auto& [k, v] = at(runs.runs, work);
  return fmt::format("run {} (keys at {}, values at {})", work, k, v);
}

}  // namespace tqlab
