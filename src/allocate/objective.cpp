#include "allocate/objective.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/name_table.h"

namespace tqlab {
namespace {

// Ranks (1-based, ties averaged) of `values`.
std::vector<double> ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = (static_cast<double>(i + j) / 2) + 1;
    i = j + 1;
  }
  return rank;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double mean_a = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mean_b = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - mean_a) * (b[i] - mean_b);
    aa += (a[i] - mean_a) * (a[i] - mean_a);
    bb += (b[i] - mean_b) * (b[i] - mean_b);
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

}  // namespace

namespace {

constexpr auto kKeyMetricNames = make_name_table<KeyMetric>({{KeyMetric::out_err, "out_err"}, {KeyMetric::kl, "kl"}});

}  // namespace

const char* key_metric_name(KeyMetric metric) { return kKeyMetricNames.name(metric).data(); }

std::optional<KeyMetric> parse_key_metric(std::string_view name) { return kKeyMetricNames.parse(name); }

double unit_damage(const Profile& profile, const Objective& objective, std::size_t unit, std::size_t candidate) {
  const UnitProfile& entry = profile.units.at(unit);
  const UnitMeasurement& measured = entry.candidates.at(candidate);
  if (profile.kind == ProfileKind::model) return measured.mean(profile.component_index("e2e_kld"));
  if (entry.unit.role == Role::value) return measured.mean(profile.component_index("attn_out_rel_err"));
  const char* name = objective.key_metric == KeyMetric::out_err ? "attn_out_rel_err" : "attn_kl";
  return objective.key_weight * measured.mean(profile.component_index(name));
}

std::vector<std::vector<double>> damage_table(const Profile& profile, const Objective& objective) {
  std::vector<std::vector<double>> table(profile.units.size());
  for (std::size_t u = 0; u < profile.units.size(); ++u) {
    for (std::size_t c = 0; c < profile.candidates.size(); ++c)
      table[u].push_back(unit_damage(profile, objective, u, c));
  }
  return table;
}

Calibration calibrate_key_weight(const Profile& offline, const Profile& model, KeyMetric key_metric) {
  if (offline.units.size() != model.units.size() || offline.candidates != model.candidates) {
    throw InternalError("calibrate_key_weight: the profiles differ in units or candidates");
  }
  const Objective unweighted{key_metric, 1.0};
  const std::vector<std::vector<double>> off = damage_table(offline, unweighted);
  const std::vector<std::vector<double>> on = damage_table(model, {});
  double largest = 0;
  for (const auto& row : on) largest = std::max(largest, *std::max_element(row.begin(), row.end()));
  struct Pair {
    Role role;
    double offline, model;
  };
  std::vector<Pair> pairs;
  for (std::size_t u = 0; u < off.size(); ++u) {
    for (std::size_t c = 0; c < off[u].size(); ++c) {
      if (on[u][c] >= kCalibrationFloor * largest && on[u][c] > 0 && off[u][c] > 0) {
        pairs.push_back({offline.units[u].unit.role, off[u][c], on[u][c]});
      }
    }
  }
  double sum[2] = {0, 0};
  int count[2] = {0, 0};
  for (const Pair& pair : pairs) {
    const int r = pair.role == Role::key ? 0 : 1;
    sum[r] += std::log(pair.model / pair.offline);
    ++count[r];
  }
  if (count[0] == 0 || count[1] == 0) {
    fail("--calibrate: the model profile has no {} damage above {} of its largest to fit the key weight to",
         count[0] == 0 ? "key" : "value", kCalibrationFloor);
  }
  Calibration calibration;
  const double key_log = sum[0] / count[0], value_log = sum[1] / count[1];
  calibration.key_weight = std::exp(key_log - value_log);
  calibration.scale = std::exp(value_log);
  calibration.pairs = static_cast<int>(pairs.size());
  double square = 0;
  std::vector<double> predicted, measured;
  for (const Pair& pair : pairs) {
    const double weighted = pair.offline * (pair.role == Role::key ? calibration.key_weight : 1.0);
    const double residual = std::log(pair.model / (calibration.scale * weighted));
    square += residual * residual;
    predicted.push_back(weighted);
    measured.push_back(pair.model);
  }
  calibration.log_rms = std::sqrt(square / static_cast<double>(pairs.size()));
  calibration.rank_correlation = pearson(ranks(predicted), ranks(measured));
  return calibration;
}

}  // namespace tqlab
