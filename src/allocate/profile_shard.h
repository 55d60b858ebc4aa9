// One shard of an allocation profile (`tqlab allocate --shard K/N`) and joining the shards into
// the profile (`tqlab merge`): the same profile an unsharded measurement gives, byte for byte
// outside "seconds", whatever the shard count. Work units and their cells: allocate/profile_work.h;
// the cut: sweep/sweep_shard.h's midpoint rule over the units' costs.
//
// {"schema": "tqlab.profile-shard/1",
//  "tqlab": {"version", "git_commit"},
//  "shard": {"index": K, "count": N},
//  "work": {"units": work units of the whole profile, "costs": [per work unit], "holds": [[first, last], ...],
//           "layers_computed": model: layers the held passes computed (0 offline)},
//  "profile": profile_json (allocate/profile_json.h) of the shard: every unit and candidate, the cells of the
//             units it does not hold 0; its content_key is the whole profile's}
//
// Merging checks the shards as a sweep's merge does (sweep/shard_coverage.h: foreign by content
// key, duplicated, overlapping, missing) and names every problem; a unit's values and a
// candidate's bytes must agree wherever two shards measured them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "allocate/profile.h"
#include "job/sweep_shard.h"

namespace tqlab {

inline constexpr std::string_view kProfileShardSchema = "tqlab.profile-shard/1";

struct ProfileShard {
  std::string path;  ///< the file it was read from
  ShardSpec shard;
  std::vector<std::uint64_t> costs;  ///< per work unit of the whole profile
  std::vector<int> held;             ///< work units held, ascending
  std::uint64_t layers_computed = 0;
  Profile profile;  ///< the held cells measured, the others 0
};

/// The work units shard `shard` holds out of `costs`, ascending.
std::vector<int> profile_shard_units(const std::vector<std::uint64_t>& costs, const ShardSpec& shard);

/// The document of `shard` (its `profile` measured with only `held` work units).
nlohmann::ordered_json profile_shard_json(const ProfileShard& shard);

/// Reads `path`. InputError "profile shard 'PATH': ..." naming the key path of what is wrong.
ProfileShard read_profile_shard(const std::string& path);

/// Whether `path` holds a tqlab.profile-shard/1 document (by its leading "schema" key, without
/// reading the rest); false for anything else, or a file that cannot be read.
bool is_profile_shard_file(const std::string& path);

/// The shards at `paths` joined into the whole profile, its seconds the shards' summed.
/// InputError "merge: ..." naming every problem on one line.
Profile merge_profile_shards(const std::vector<std::string>& paths);

}  // namespace tqlab
