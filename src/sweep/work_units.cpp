#include "sweep/work_units.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "core/error.h"
#include "core/index.h"

namespace tqlab {

WorkUnits::WorkUnits(const SweepPlan& plan)
    : dump_(plan.dump.get()),
      items_(plan.dump ? SweepItems(*plan.dump) : SweepItems()),
      run_seeds_{static_cast<int>(plan.runs.size()), static_cast<int>(plan.config.seeds.size())},
      synthetic_trials_(plan.dump ? synthetic_trial_count(plan) : 0),
      model_chunks_(plan.model ? plan.model->chunks : 0),
      attention_(plan.attention),
      margins_(plan.needle ? plan.config.metrics.needle_options.margins.size() : 0) {}

int WorkUnits::group(int unit) const {
  const KvLayerShape& shape = at(dump_->layers(), items_.item(unit).layer_index);
  return shape.q_heads / shape.kv_heads;
}

UnitKind WorkUnits::kind(int unit) const {
  if (unit < items_.count()) return UnitKind::item;
  if (unit < first_model_unit()) return UnitKind::synthetic_trial;
  return unit < first_model_unit() + model_chunks_ ? UnitKind::model_base : UnitKind::model_run;
}

int WorkUnits::model_chunk(int unit) const {
  const int offset = unit - first_model_unit();
  return offset < model_chunks_ ? offset : (offset - model_chunks_) % model_chunks_;
}

int WorkUnits::model_run_seed(int unit) const { return (unit - first_model_unit() - model_chunks_) / model_chunks_; }

int WorkUnits::model_run_unit(int run_seed, int chunk) const {
  return first_model_unit() + model_chunks_ + run_seed * model_chunks_ + chunk;
}

std::string WorkUnits::describe(int unit) const {
  switch (kind(unit)) {
    case UnitKind::synthetic_trial:
      return fmt::format("unit {} (synthetic needle trial {})", unit, synthetic_trial(unit));
    case UnitKind::model_base:
      return fmt::format("unit {} (model base, chunk {})", unit, model_chunk(unit));
    case UnitKind::model_run: {
      const int run_seed = model_run_seed(unit);
      return fmt::format("unit {} (model run {}, seed index {}, chunk {})", unit, run_seed / run_seeds_.seeds,
                         run_seed % run_seeds_.seeds, model_chunk(unit));
    }
    case UnitKind::item:
      break;
  }
  const WorkItem item = items_.item(unit);
  return fmt::format("unit {} (layer {}, sequence {}, kv head {})", unit, at(dump_->layers(), item.layer_index).layer,
                     item.seq, item.kv_head);
}

SweepTotals empty_plan_totals(const SweepPlan& plan, const WorkUnits& units) {
  SweepTotals totals;
  if (plan.dump) {
    totals = empty_sweep_totals(*plan.dump, units.items(), units.run_seeds(), units.synthetic_trials(), plan.attention,
                                plan.config.metrics.per_head);
  }
  if (plan.model) totals.end_to_end = empty_end_to_end_totals(*plan.model, units.run_seeds().count());
  return totals;
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
  switch (units.kind(unit)) {
    case UnitKind::synthetic_trial:
      return !at(totals.synthetic, units.synthetic_trial(unit)).empty();
    case UnitKind::model_base:
      return at(totals.end_to_end->base_nll, units.model_chunk(unit)).has_value();
    case UnitKind::model_run:
      return at(totals.end_to_end->runs, units.model_run_seed(unit) * units.model_chunks() + units.model_chunk(unit))
          .has_value();
    case UnitKind::item:
      break;
  }
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

// A model unit: one chunk's series (or base nll) of the expected length, bytes for every layer.
void add_model_unit(EndToEndTotals& totals, const WorkUnits& units, UnitTotals&& unit) {
  const std::string what = units.describe(unit.unit);
  const auto scored = static_cast<std::size_t>(totals.scored_per_chunk);
  const int chunk = units.model_chunk(unit.unit);
  if (units.kind(unit.unit) == UnitKind::model_base) {
    if (unit.base_nll.size() != scored) {
      fail("{}: the nll of {} tokens, a chunk scores {}", what, unit.base_nll.size(), scored);
    }
    at(totals.base_nll, chunk) = std::move(unit.base_nll);
    return;
  }
  if (!unit.model_run) fail("{}: no series", what);
  const NextTokenSeries& series = unit.model_run->series;
  for (const std::vector<double>* values :
       {&series.nll_base, &series.nll, &series.kld, &series.p_base, &series.p, &series.same_top1}) {
    if (values->size() != scored) fail("{}: a series of {} tokens, a chunk scores {}", what, values->size(), scored);
  }
  const KvCacheBytes& bytes = unit.model_run->bytes;
  if (bytes.value.size() != bytes.key.size() || bytes.key_values.size() != bytes.key.size() ||
      bytes.value_values.size() != bytes.key.size()) {
    fail("{}: cache bytes of differing layer counts", what);
  }
  at(totals.runs, units.model_run_seed(unit.unit) * units.model_chunks() + chunk) = std::move(unit.model_run);
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
  if (units.kind(unit.unit) == UnitKind::model_base || units.kind(unit.unit) == UnitKind::model_run) {
    add_model_unit(*totals.end_to_end, units, std::move(unit));
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
