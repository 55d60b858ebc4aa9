// Reading back what tqlab wrote: allocation profiles (the cache and --profile-file), profile and
// sweep shards, sweep journals, allocations and results re-run. Such a file is an input like any
// other: edited by hand, cut short, or left by another version, it must give an InputError naming
// the file, the key path (or unit) and what was expected, never a crash or a number silently wrong.
// One rule for every such document (docs/RELIABILITY.md#read-back):
//   1. every number goes through a checked read: finite, at most kReadBackLimit in magnitude (so
//      that sums over millions of entries stay finite), and non-negative wherever the quantity is
//      (counts, bytes, seconds, weights, errors): read_back_number;
//   2. every list indexed by what the reader already knows (units, candidates, seeds) holds each
//      expected entry exactly once, in the writer's order: check_each_once;
//   3. numbers that restate one another agree (a shard's units with its index and count, a
//      profile's units with its layers), checked by the document's own reader, naming both.
// Only what a failure leads to differs: the profile cache is warned about and measured again;
// everything else is exit 2.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "io/json_reader.h"

namespace tqlab {

/// No measurement tqlab writes comes near it; 1e208 of them would still sum to a finite double.
inline constexpr double kReadBackLimit = 1e100;

enum class Sign { any, non_negative, positive };

/// A finite number of magnitude at most kReadBackLimit, and of sign `sign`; InputError naming the
/// reader's key path otherwise.
double read_back_number(const JsonReader& reader, Sign sign);

/// The same for a number already read (a value of a long array), `where` naming it after the key path.
double check_read_back_number(const JsonReader& reader, double value, Sign sign, std::string_view where);

/// Whether `found` (what `list` holds, by name) is exactly `expected`, in order: InputError naming
/// `list` and the first entry missing, repeated, foreign or out of order ("unit 'L1.h0.V' is
/// missing"). `what` names one entry ("unit", "candidate").
void check_each_once(const JsonReader& list, const std::vector<std::string>& found,
                     const std::vector<std::string>& expected, std::string_view what);

}  // namespace tqlab
