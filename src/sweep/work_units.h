// A sweep's work in units that can be computed anywhere, at any time, and put
// together exactly: what shards slice (sweep_shard.h), what the journal
// records (sweep_journal.h) and what a merge reassembles (sweep_merge.h).
//
// Unit numbers, fixed by the config and the data's shape alone:
//   [0, items)                       the work items of sweep_items.h, in their
//                                    order (layer, then sequence, then kv head);
//   [items, items + synthetic)       the synthetic needle's trials, in order;
//   then, with a model block of C chunks:
//   [.., + C)                        the base pass over chunk c (its nll);
//   [.., + runs x seeds x C)         (run, seed, chunk), runs outer, chunks
//                                    inner: one chunk's per-token comparison
//                                    with the base, and its cache's bytes.
// A model unit of chunk c computes the base of chunk c itself (each chunk is a
// prefill of its own: sweep_model.h), whichever units it is computed with.
//
// A UnitTotals is complete in itself: the unit's additive totals exactly as it
// produced them, and, for the attention KL percentiles, the largest of the
// unit's KL values per (run, seed) and q head, as many as the sweep's widest
// tail keeps (metrics/quantile.h says why that is exact). Adding units to a
// SweepTotals in any order, from any process, gives the totals of one run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sweep/sweep_item.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_totals.h"

namespace tqlab {

enum class UnitKind { item, synthetic_trial, model_base, model_run };

class WorkUnits {
 public:
  explicit WorkUnits(const SweepPlan& plan);

  int count() const { return first_model_unit() + model_chunks_ * (1 + run_seeds_.count()); }
  /// (run, seed) pairs every unit is measured for.
  const RunSeeds& run_seeds() const { return run_seeds_; }
  const SweepItems& items() const { return items_; }
  int synthetic_trials() const { return synthetic_trials_; }
  UnitKind kind(int unit) const;
  /// Whether items measure attention (and so have KL values), and the planted needle's margins (0 when off).
  bool attention() const { return attention_; }
  std::size_t needle_margins() const { return margins_; }
  /// The q heads of an item unit's group (0 without queries).
  int group(int unit) const;
  /// The trial of a synthetic_trial unit.
  int synthetic_trial(int unit) const { return unit - items_.count(); }
  /// Chunks of the model block (0 without one), and the first model unit.
  int model_chunks() const { return model_chunks_; }
  int first_model_unit() const { return items_.count() + synthetic_trials_; }
  /// The chunk of a model unit, and the (run, seed) index of a model_run unit.
  int model_chunk(int unit) const;
  int model_run_seed(int unit) const;
  /// The model_run unit of (run_seed, chunk), and the model_base unit of chunk.
  int model_run_unit(int run_seed, int chunk) const;
  int model_base_unit(int chunk) const { return first_model_unit() + chunk; }
  /// "unit 12 (layer 3, sequence 0, kv head 1)", "unit 70 (synthetic needle trial 2)": for messages.
  std::string describe(int unit) const;

 private:
  const KvDump* dump_;
  SweepItems items_;
  RunSeeds run_seeds_;
  int synthetic_trials_ = 0;
  int model_chunks_ = 0;
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
  std::vector<double> base_nll;             ///< model_base: the base's nll per scored token of the chunk
  std::optional<RunSeedResult> model_run;   ///< model_run: the chunk's series and bytes
};

/// Empty totals for every unit of `plan` (items, synthetic trials, model units).
SweepTotals empty_plan_totals(const SweepPlan& plan, const WorkUnits& units);

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
