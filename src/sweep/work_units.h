// A sweep's work in units that can be computed anywhere, at any time, and put
// together exactly: what shards slice (sweep_shard.h), what the journal
// records (sweep_journal.h) and what a merge reassembles (sweep_merge.h).
//
// Unit numbers, fixed by the config and the data's shape alone:
//   [0, items)                       the work items of sweep_items.h, in their
//                                    order (layer, then sequence, then kv head);
//   [items, items + synthetic)       the synthetic needle's trials, in order.
// Another kind of unit (an end-to-end (run, seed, chunk) whose totals are
// per-token series) is numbered after these, with a UnitKind, a member of
// UnitTotals, and a case in add_unit_totals and totals_json.h of its own.
//
// A UnitTotals is complete in itself: the unit's additive totals exactly as it
// produced them, and, for the attention KL percentiles, the largest of the
// unit's KL values per (run, seed) and q head, as many as the sweep's widest
// tail keeps (metrics/quantile.h says why that is exact). Adding units to a
// SweepTotals in any order, from any process, gives the totals of one run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sweep/sweep_item.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_totals.h"

namespace tqlab {

enum class UnitKind { item, synthetic_trial };

class WorkUnits {
 public:
  explicit WorkUnits(const SweepPlan& plan);

  int count() const { return items_.count() + synthetic_trials_; }
  /// (run, seed) pairs every unit is measured for.
  const RunSeeds& run_seeds() const { return run_seeds_; }
  const SweepItems& items() const { return items_; }
  int synthetic_trials() const { return synthetic_trials_; }
  UnitKind kind(int unit) const { return unit < items_.count() ? UnitKind::item : UnitKind::synthetic_trial; }
  /// Whether items measure attention (and so have KL values), and the planted needle's margins (0 when off).
  bool attention() const { return attention_; }
  std::size_t needle_margins() const { return margins_; }
  /// The q heads of an item unit's group (0 without queries).
  int group(int unit) const;
  /// The trial of a synthetic_trial unit.
  int synthetic_trial(int unit) const { return unit - items_.count(); }
  /// "unit 12 (layer 3, sequence 0, kv head 1)", "unit 70 (synthetic needle trial 2)": for messages.
  std::string describe(int unit) const;

 private:
  const KvDump* dump_;
  SweepItems items_;
  RunSeeds run_seeds_;
  int synthetic_trials_ = 0;
  bool attention_ = false;
  std::size_t margins_ = 0;  // of the planted needle, when it runs
};

/// One (run, seed)'s attention KL values of one q head of an item: how many,
/// and the largest min(count, the widest tail's capacity) of them, largest first.
struct KlPart {
  std::int64_t count = 0;
  std::vector<double> largest;
};

/// What one unit adds to a sweep's totals.
struct UnitTotals {
  int unit = -1;
  ItemTotals item;                          ///< item units
  std::vector<std::vector<KlPart>> kl;      ///< item units with attention: per (run, seed), per q head of the group
  std::vector<SyntheticOutcome> synthetic;  ///< synthetic trials: per (run, seed)
};

/// The unit of a measured item; its KL values are cut to the largest `keep` per q head.
UnitTotals item_unit_totals(int unit, ItemMeasurement&& measured, std::size_t keep);

/// How many KL values per q head an item's unit keeps: the capacity of the
/// widest tail of `totals` (0 without attention).
std::size_t kl_values_kept(const SweepTotals& totals);

/// Whether `unit` is already in `totals`.
bool unit_done(const SweepTotals& totals, const WorkUnits& units, int unit);

/// Where an item unit's KL values are: in the unit (as measured, or a journal
/// record), or added to the tails on their own (a shard document keeps its tails whole).
enum class UnitKl { in_unit, in_tails };

/// Puts `unit` into `totals` (item totals, KL parts into every tail, synthetic
/// outcomes), moving from it. InputError, naming the unit, when it does not fit
/// the sweep: another number of (run, seed) pairs or q heads, KL parts cut
/// shorter than the tails need (or any, with UnitKl::in_tails), or a unit already there.
void add_unit_totals(SweepTotals& totals, const WorkUnits& units, UnitTotals&& unit, UnitKl kl = UnitKl::in_unit);

}  // namespace tqlab
