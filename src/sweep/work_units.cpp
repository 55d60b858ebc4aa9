#include "sweep/work_units.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "core/error.h"
#include "core/index.h"
#include "sweep/sweep_runner.h"

namespace tqlab {

WorkUnits::WorkUnits(const SweepPlan& plan)
    : dump_(plan.dump.get()),
      items_(*plan.dump),
      run_seeds_{static_cast<int>(plan.runs.size()), static_cast<int>(plan.config.seeds.size())},
      synthetic_trials_(synthetic_trial_count(plan)),
      attention_(plan.attention),
      margins_(plan.needle ? plan.config.metrics.needle_options.margins.size() : 0) {}

int WorkUnits::group(int unit) const {
  const KvLayerShape& shape = at(dump_->layers(), items_.item(unit).layer_index);
  return shape.q_heads / shape.kv_heads;
}

std::string WorkUnits::describe(int unit) const {
  if (kind(unit) == UnitKind::synthetic_trial) {
    return fmt::format("unit {} (synthetic needle trial {})", unit, synthetic_trial(unit));
  }
  const WorkItem item = items_.item(unit);
  return fmt::format("unit {} (layer {}, sequence {}, kv head {})", unit, at(dump_->layers(), item.layer_index).layer,
                     item.seq, item.kv_head);
}

UnitTotals item_unit_totals(int unit, ItemMeasurement&& measured, std::size_t keep) {
  UnitTotals out;
  out.unit = unit;
  out.item = std::move(measured.totals);
  out.kl.resize(measured.kl.size());
  for (std::size_t rs = 0; rs < measured.kl.size(); ++rs) {
    for (std::vector<double>& values : measured.kl[rs]) {
      KlPart& part = out.kl[rs].emplace_back();
      part.count = static_cast<std::int64_t>(values.size());
      const std::size_t kept = std::min(keep, values.size());
      // Largest first, so that a journal record depends only on the item, not on the order of its values.
      std::partial_sort(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(kept), values.end(),
                        std::greater<double>());
      values.resize(kept);
      part.largest = std::move(values);
    }
  }
  measured.kl.clear();
  return out;
}

std::size_t kl_values_kept(const SweepTotals& totals) {
  return totals.kl_tails.empty() ? 0 : totals.kl_tails.front().all->capacity();
}

bool unit_done(const SweepTotals& totals, const WorkUnits& units, int unit) {
  if (units.kind(unit) == UnitKind::synthetic_trial) return !at(totals.synthetic, units.synthetic_trial(unit)).empty();
  return at(totals.items, unit).done;
}

namespace {

// What the summary relies on, checked once here: a unit from a journal or a
// shard document is held to it like one just measured.
void check_item_fits(const WorkUnits& units, const UnitTotals& unit, std::size_t keep, UnitKl kl) {
  const bool attention = units.attention();
  const std::size_t margins = units.needle_margins();
  const std::string what = units.describe(unit.unit);
  const ItemTotals& item = unit.item;
  const auto run_seeds = static_cast<std::size_t>(units.run_seeds().count());
  const auto group = static_cast<std::size_t>(units.group(unit.unit));
  if (!item.done) fail("{}: its totals are marked as not computed", what);
  if (item.tokens == 0) {
    if (!item.run_seeds.empty() || !unit.kl.empty()) fail("{}: totals for an item without tokens", what);
    return;
  }
  if (item.run_seeds.size() != run_seeds) {
    fail("{}: totals of {} (run, seed) pairs, the sweep has {}", what, item.run_seeds.size(), run_seeds);
  }
  for (const ItemRunSeedTotals& rs : item.run_seeds) {
    if (rs.attention.size() != (attention ? group : 0)) {
      fail("{}: attention sums of {} q heads, expected {}", what, rs.attention.size(), attention ? group : 0);
    }
    for (const std::vector<NeedleOutcome>& trial : rs.needle) {
      if (trial.size() != margins)
        fail("{}: needle outcomes at {} margins, the sweep has {}", what, trial.size(), margins);
    }
    if (static_cast<int>(rs.needle.size()) != item.measured_trials) {
      fail("{}: {} needle trials measured, but outcomes of {}", what, item.measured_trials, rs.needle.size());
    }
  }
  const std::size_t kl_run_seeds = attention && kl == UnitKl::in_unit ? run_seeds : 0;
  if (unit.kl.size() != kl_run_seeds) {
    fail("{}: KL values of {} (run, seed) pairs, expected {}", what, unit.kl.size(), kl_run_seeds);
  }
  for (const std::vector<KlPart>& heads : unit.kl) {
    if (heads.size() != group) fail("{}: KL values of {} q heads, the item has {}", what, heads.size(), group);
    for (const KlPart& part : heads) {
      const auto kept = static_cast<std::int64_t>(part.largest.size());
      const std::int64_t needed = std::min<std::int64_t>(part.count, static_cast<std::int64_t>(keep));
      if (part.count < 0 || kept > part.count || kept < needed) {
        fail("{}: {} KL values kept of {}; the sweep's tails need the largest {}", what, kept, part.count, needed);
      }
    }
  }
}

}  // namespace

void add_unit_totals(SweepTotals& totals, const WorkUnits& units, UnitTotals&& unit, UnitKl kl) {
  if (unit.unit < 0 || unit.unit >= units.count()) {
    fail("unit {} is not a unit of this sweep (it has {})", unit.unit, units.count());
  }
  if (unit_done(totals, units, unit.unit)) fail("{} is there twice", units.describe(unit.unit));
  if (units.kind(unit.unit) == UnitKind::synthetic_trial) {
    const auto run_seeds = static_cast<std::size_t>(units.run_seeds().count());
    if (unit.synthetic.size() != run_seeds) {
      fail("{}: outcomes of {} (run, seed) pairs, the sweep has {}", units.describe(unit.unit), unit.synthetic.size(),
           run_seeds);
    }
    at(totals.synthetic, units.synthetic_trial(unit.unit)) = std::move(unit.synthetic);
    return;
  }
  const WorkItem item = units.items().item(unit.unit);
  const int group = units.group(unit.unit);
  check_item_fits(units, unit, kl_values_kept(totals), kl);
  for (std::size_t rs = 0; rs < unit.kl.size(); ++rs) {
    KlTails& tails = totals.kl_tails[rs];
    UpperQuantile& layer = at(tails.layer, item.layer_index);
    std::vector<UpperQuantile>& heads = at(tails.head, item.layer_index);
    for (int g = 0; g < group; ++g) {
      const KlPart& part = at(unit.kl[rs], g);
      tails.all->add_kept(part.count, part.largest);
      layer.add_kept(part.count, part.largest);
      if (!heads.empty()) at(heads, item.kv_head * group + g).add_kept(part.count, part.largest);
    }
  }
  at(totals.items, unit.unit) = std::move(unit.item);
}

}  // namespace tqlab
