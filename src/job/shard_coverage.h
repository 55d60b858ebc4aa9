// Whether a set of shard documents is one job's, every unit in exactly one of them: the checks
// `tqlab merge` makes before adding anything, for a sweep's shards (sweep_merge.h) and an
// allocation profile's (allocate/profile_shard.h) alike. Every problem is named, each file with
// its shard K/N:
//   foreign:     another identity than the rest (the rest: what most shards agree on; on a tie,
//                the first file's), the first part of the identity that differs named;
//   duplicated:  the same file twice, or two files of one shard K/N;
//   overlapping: two shards that hold some of the same units (1/2 and 1/3);
//   missing:     units no shard holds: named as the shards K/N that would hold them when the
//                shards agree on N, else as unit ranges;
//   inconsistent: a shard whose units are not those its K/N cuts (an edited index or count).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "job/sweep_shard.h"

namespace tqlab {

/// One part of what shards of one job share: "another config" / "config hash" / its hex.
struct ShardIdentityPart {
  std::string what;
  std::string key;
  std::string value;
};

/// What a shard document says it is.
struct ShardClaim {
  std::string path;
  ShardSpec shard;
  std::vector<ShardIdentityPart> identity;
  std::vector<int> held;  ///< the units it holds, ascending
};

/// "'PATH' (K/N)", for messages.
std::string shard_claim_name(const ShardClaim& claim);

/// Which shards to merge: false for the foreign, those given twice and duplicates, each with a
/// problem appended to `problems`.
std::vector<bool> shards_of_one_job(const std::vector<ShardClaim>& claims, std::vector<std::string>& problems);

/// Appends the inconsistent shards, the overlaps and the missing units of the shards `used` marks,
/// out of `units` units.
/// `owner(N)`: for each unit, the shard 1..N that holds it in a cut into N.
void check_shard_coverage(const std::vector<ShardClaim>& claims, const std::vector<bool>& used, int units,
                          const std::function<std::vector<int>(int count)>& owner, std::vector<std::string>& problems);

/// InputError "WHAT: N problem(s): A; B" when `problems` is not empty.
void fail_on_problems(const std::string& what, const std::vector<std::string>& problems);

}  // namespace tqlab
