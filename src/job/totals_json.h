// A sweep's totals as JSON, exact to the bit: what shard documents
// (shard_document.h) and journal records (sweep_journal.h) are made of.
//
// Numbers: a finite double is a JSON number printed with the shortest digits
// that read back to the same bits (nlohmann::json; -0.0 stays -0.0); NaN and
// the infinities, which JSON cannot hold, are the strings "NaN", "Infinity"
// and "-Infinity" (a NaN's payload is not kept: every NaN sums to NaN).
//
// A unit (work_units.h), one of:
//   item:      {"unit": U, "tokens": T, "skipped": [keys, values, queries],
//               "needle_trials": M,
//               "run_seeds": [per (run, seed): {
//                   "reconstruction": [num, den] x 6, flat, in ReconstructionSum order,
//                   "attention": [per q head of the group: [num, den] x 7 flat, AttentionSum order],
//                   "needle": [per trial measured: [per margin: [top1 (bool), weight ratio]]],
//                   "bits": [key bits, value bits, key values, value values, effective bits]}],
//               "kl": [per (run, seed): [per q head: [count, [largest values, largest first]]]]}
//              ("kl" only in journal records; a shard document keeps the tails whole);
//   synthetic: {"unit": U, "synthetic": [per (run, seed): [measured (bool), weight, output error]]};
//   model base: {"unit": U, "base_nll": [per scored token of the chunk]};
//   model run: {"unit": U, "model_run": {"series": {"nll_base", "nll", "kld", "p_base", "p", "same_top1":
//               [per scored token of the chunk]}, "bytes": {"key", "value", "key_values",
//               "value_values": [per layer], "key_head", "value_head": [per layer: [per kv head]]}}}.
// A KL tail (metrics/quantile.h's UpperQuantile): [count, [kept values, largest first]].
//
// Reading checks types and the fixed lengths and names the key path of what is
// wrong ("KIND 'FILE': items[3].run_seeds[0].bits: ..."); whether a unit fits a
// sweep is add_unit_totals' to check (work_units.h).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "io/json_reader.h"
#include "sweep/work_units.h"

namespace tqlab {

nlohmann::ordered_json exact_number_json(double value);
/// A number, or one of the strings above.
double read_exact_number(const JsonReader& reader);

/// `with_kl`: write the unit's KL parts (journal records).
nlohmann::ordered_json unit_totals_json(const UnitTotals& unit, bool with_kl);
UnitTotals read_unit_totals(const JsonReader& reader);

nlohmann::ordered_json kl_part_json(const KlPart& part);
KlPart read_kl_part(const JsonReader& reader);

}  // namespace tqlab
