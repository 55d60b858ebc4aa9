#include "allocate/profile_shard.h"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "allocate/profile_json.h"
#include "allocate/profile_work.h"
#include "core/error.h"
#include "core/index.h"
#include "core/text.h"
#include "io/json_reader.h"
#include "job/shard_coverage.h"
#include "job/shard_document.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kKind = "profile shard";

std::string name_of(const ProfileShard& shard) {
  return fmt::format("'{}' ({})", printable(shard.path), shard.shard.text());
}

// Whether two profiles have the same units, candidates and seeds (the content key says so; this
// guards the indices of a file edited by hand).
bool same_shape(const Profile& a, const Profile& b) {
  if (a.kind != b.kind || a.candidates != b.candidates || a.seeds.size() != b.seeds.size() ||
      a.units.size() != b.units.size() || a.layers != b.layers) {
    return false;
  }
  for (std::size_t u = 0; u < a.units.size(); ++u) {
    if (a.units[u].unit.name() != b.units[u].unit.name()) return false;
  }
  return true;
}

}  // namespace

std::vector<int> profile_shard_units(const std::vector<std::uint64_t>& costs, const ShardSpec& shard) {
  const std::vector<int> owner = assign_shards_by_cost(costs, shard.count);
  std::vector<int> held;
  for (std::size_t work = 0; work < owner.size(); ++work) {
    if (owner[work] == shard.index) held.push_back(static_cast<int>(work));
  }
  return held;
}

nlohmann::ordered_json profile_shard_json(const ProfileShard& shard) {
  return {{"schema", kProfileShardSchema},
          {"tqlab", {{"version", TQLAB_VERSION}, {"git_commit", TQLAB_GIT_COMMIT}}},
          {"shard", {{"index", shard.shard.index}, {"count", shard.shard.count}}},
          {"work",
           {{"units", shard.costs.size()},
            {"costs", shard.costs},
            {"holds", unit_ranges_json(shard.held)},
            {"layers_computed", shard.layers_computed}}},
          {"profile", profile_json(shard.profile, nullptr)}};
}

ProfileShard read_profile_shard(const std::string& path) {
  const nlohmann::json document = read_json_file(path, kKind);
  const JsonReader root(document, path, "", std::string(kKind));
  expect_shard_schema(root, kProfileShardSchema, "tqlab.profile/1", " (a whole profile, merged already)");
  root.allow_only({"schema", "tqlab", "shard", "work", "profile"});
  ProfileShard shard;
  shard.path = path;
  // Who computed it is in the content key too (tqlab's version and commit): a shard of another commit is foreign.
  shard.shard = read_shard_header(root).shard;
  const JsonReader work = root.at("work");
  const auto units = static_cast<int>(work.at("units").as_integer(0, 1 << 30));
  for (const JsonReader& cost : work.at("costs").elements()) shard.costs.push_back(cost.as_unsigned());
  if (static_cast<int>(shard.costs.size()) != units) {
    work.at("costs").fail("{} costs for {} work units", shard.costs.size(), units);
  }
  shard.held = read_unit_ranges(work.at("holds"), units);
  shard.layers_computed = work.at("layers_computed").as_unsigned();
  shard.profile = profile_from_json(document.at("profile"), path, ProfileCells::some);
  if (profile_work_count(shard.profile) != units) {
    work.at("units").fail("{} work units, but its profile's candidates, seeds and units make {}", units,
                          profile_work_count(shard.profile));
  }
  return shard;
}

bool is_profile_shard_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(256, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const std::size_t schema = head.find("\"schema\"");
  return schema != std::string::npos &&
         head.find(fmt::format("\"{}\"", kProfileShardSchema), schema) != std::string::npos;
}

Profile merge_profile_shards(const std::vector<std::string>& paths) {
  if (paths.empty()) fail("merge: no profile shard documents given");
  std::vector<ProfileShard> shards;
  for (const std::string& path : paths) shards.push_back(read_profile_shard(path));
  std::vector<ShardClaim> claims;
  for (const ProfileShard& shard : shards) {
    claims.push_back(
        {shard.path, shard.shard, {{"another profile", "content key", shard.profile.content_key}}, shard.held});
  }
  std::vector<std::string> problems;
  std::vector<bool> used = shards_of_one_job(claims, problems);
  std::size_t reference = 0;
  while (reference < shards.size() && !used[reference]) ++reference;
  if (reference == shards.size()) fail_on_problems("merge", problems);
  const ProfileShard& first = shards[reference];
  for (std::size_t i = 0; i < shards.size(); ++i) {
    if (used[i] && (shards[i].costs != first.costs || !same_shape(shards[i].profile, first.profile))) {
      problems.push_back(fmt::format("{} has the content key of {} but not its work units or profile shape",
                                     name_of(shards[i]), name_of(first)));
      used[i] = false;
    }
  }
  check_shard_coverage(
      claims, used, static_cast<int>(first.costs.size()),
      [&](int count) { return assign_shards_by_cost(first.costs, count); }, problems);
  fail_on_problems("merge", problems);

  Profile merged = first.profile;
  merged.seconds = 0;
  std::vector<const ProfileShard*> values_from(merged.units.size(), nullptr);
  std::vector<std::vector<const ProfileShard*>> bytes_from(merged.units.size());
  for (UnitProfile& unit : merged.units) {
    unit.values = 0;
    for (UnitMeasurement& measured : unit.candidates) {
      measured.bytes = 0;
      for (std::vector<double>& per_seed : measured.components) std::fill(per_seed.begin(), per_seed.end(), 0.0);
    }
  }
  for (auto& from : bytes_from) from.assign(merged.candidates.size(), nullptr);
  std::uint64_t layers_computed = 0;
  for (const ProfileShard& shard : shards) {
    merged.seconds += shard.profile.seconds;
    layers_computed += shard.layers_computed;
    for (int work : shard.held) {
      for (const ProfileCell& cell : profile_work_cells(merged, work)) {
        const auto u = static_cast<std::size_t>(cell.unit), c = static_cast<std::size_t>(cell.candidate);
        const UnitProfile& part = shard.profile.units[u];
        UnitProfile& whole = merged.units[u];
        for (std::size_t k = 0; k < whole.candidates[c].components.size(); ++k) {
          at(whole.candidates[c].components[k], cell.seed) = at(part.candidates[c].components[k], cell.seed);
        }
        if (values_from[u] == nullptr) {
          values_from[u] = &shard;
          whole.values = part.values;
        } else if (whole.values != part.values) {
          fail("merge: {} and {} disagree on the values unit {} holds ({} and {})", name_of(*values_from[u]),
               name_of(shard), whole.unit.name(), whole.values, part.values);
        }
        if (bytes_from[u][c] == nullptr) {
          bytes_from[u][c] = &shard;
          whole.candidates[c].bytes = part.candidates[c].bytes;
        } else if (whole.candidates[c].bytes != part.candidates[c].bytes) {
          fail("merge: {} and {} disagree on the bytes of {} at {} ({} and {})", name_of(*bytes_from[u][c]),
               name_of(shard), whole.unit.name(), merged.candidates[c], whole.candidates[c].bytes,
               part.candidates[c].bytes);
        }
      }
    }
  }
  if (merged.kind == ProfileKind::model) {
    const double passes = static_cast<double>(first.costs.size());
    merged.layers_computed_share =
        passes > 0 ? static_cast<double>(layers_computed) / (passes * static_cast<double>(merged.layers.size())) : 1.0;
  }
  // The whole profile passes the check any profile read back passes (every cell measured), before it is written.
  const nlohmann::json whole = nlohmann::json::parse(profile_json(merged, nullptr).dump());
  (void)profile_from_json(whole, fmt::format("merge of {} shards", shards.size()));
  return merged;
}

}  // namespace tqlab
