// What an allocation minimises: each unit's damage under a candidate, summed over the units.
//
//   model profile:   damage = e2e_kld (nats per scored token) with only the unit quantized: the
//                    end-to-end KL of the output distribution, as per-layer searches score layers.
//   offline profile: keys   damage = key_weight x (attn_out_rel_err, or attn_kl with key_metric kl)
//                    values damage = attn_out_rel_err
//                    (allocate/profile.h: each the unit's share of the run's metric). With the
//                    defaults (out_err, weight 1) the summed damage predicts a run's
//                    attn_out_rel_err, counting a head's key and value errors as if they added
//                    (they partly cancel: |a + b| <= |a| + |b|). No attention metric orders the
//                    K-vs-V trade-off as the model does, so key_weight is the offline objective's
//                    one free parameter, and calibrate_key_weight() fits it to a model profile.
// Damage is the mean over the profile's seeds.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allocate/profile.h"

namespace tqlab {

enum class KeyMetric { out_err, kl };

/// "out_err", "kl".
const char* key_metric_name(KeyMetric metric);
std::optional<KeyMetric> parse_key_metric(std::string_view name);

struct Objective {
  KeyMetric key_metric = KeyMetric::out_err;  ///< offline only
  double key_weight = 1.0;                    ///< offline only
};

/// The damage of candidate `candidate` on unit `unit` of `profile`.
double unit_damage(const Profile& profile, const Objective& objective, std::size_t unit, std::size_t candidate);

/// [unit][candidate] damages.
std::vector<std::vector<double>> damage_table(const Profile& profile, const Objective& objective);

/// A key weight fitted to a model profile (the same units and candidates, same granularity).
struct Calibration {
  double key_weight = 1;        ///< exp(mean log ratio of keys - mean log ratio of values)
  double scale = 1;             ///< model damage per offline damage of values: exp(mean log ratio of values)
  int pairs = 0;                ///< (unit, candidate) pairs the fit used
  double log_rms = 0;           ///< RMS of log(model damage / (scale x calibrated offline damage)) over them
  double rank_correlation = 0;  ///< Spearman's rho of calibrated offline and model damage over them
};

/// Fits the key weight of the offline objective with `key_metric` so that offline damage is
/// proportional to model damage: with r = log(model damage / offline damage at weight 1) over
/// the (unit, candidate) pairs whose model damage is at least kCalibrationFloor of the largest
/// (smaller ones, fp16 and 8 bits, are rounding noise), key_weight = exp(mean r over keys -
/// mean r over values). A least-squares fit in log space: each pair counts once, whatever its
/// size. InputError when either role has no usable pair.
Calibration calibrate_key_weight(const Profile& offline, const Profile& model, KeyMetric key_metric);

inline constexpr double kCalibrationFloor = 1e-3;

}  // namespace tqlab
