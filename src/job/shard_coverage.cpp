#include "job/shard_coverage.h"

#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/index.h"
#include "core/text.h"
#include "job/shard_document.h"

namespace tqlab {
namespace {

std::string short_hash(const std::string& hash) { return hash.substr(0, 12) + "…"; }

bool same_path(const std::string& a, const std::string& b) {
  std::error_code error;
  return std::filesystem::equivalent(a, b, error);
}

std::vector<std::string> identity_values(const ShardClaim& claim) {
  std::vector<std::string> values;
  for (const ShardIdentityPart& part : claim.identity) values.push_back(part.value);
  return values;
}

// The identity most shards agree on; on a tie the first file's.
std::vector<std::string> reference_of(const std::vector<ShardClaim>& claims) {
  std::map<std::vector<std::string>, int> votes;
  for (const ShardClaim& claim : claims) ++votes[identity_values(claim)];
  std::vector<std::string> best = identity_values(claims.front());
  for (const ShardClaim& claim : claims) {
    const std::vector<std::string> values = identity_values(claim);
    if (votes[values] > votes[best]) best = values;
  }
  return best;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : std::string(separator)) + part;
  return text;
}

}  // namespace

std::string shard_claim_name(const ShardClaim& claim) {
  return fmt::format("'{}' ({})", printable(claim.path), claim.shard.text());
}

std::vector<bool> shards_of_one_job(const std::vector<ShardClaim>& claims, std::vector<std::string>& problems) {
  std::vector<bool> used(claims.size(), true);
  if (claims.empty()) return used;
  const std::vector<std::string> reference = reference_of(claims);
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const ShardClaim& claim = claims[i];
    for (std::size_t part = 0; part < claim.identity.size() && used[i]; ++part) {
      const ShardIdentityPart& identity = claim.identity[part];
      if (identity.value == at(reference, part)) continue;
      problems.push_back(fmt::format("{} is foreign: {} ({} {}, the others' {})", shard_claim_name(claim),
                                     identity.what, identity.key, short_hash(identity.value),
                                     short_hash(at(reference, part))));
      used[i] = false;
    }
  }
  for (std::size_t i = 0; i < claims.size(); ++i) {
    for (std::size_t j = 0; j < i && used[i]; ++j) {
      if (!used[j]) continue;
      if (same_path(claims[i].path, claims[j].path)) {
        problems.push_back(fmt::format("'{}' is given twice", printable(claims[i].path)));
        used[i] = false;
      } else if (claims[i].shard == claims[j].shard) {
        problems.push_back(fmt::format("'{}' and '{}' are duplicates: both are shard {}", printable(claims[j].path),
                                       printable(claims[i].path), claims[i].shard.text()));
        used[i] = false;
      }
    }
  }
  return used;
}

void check_shard_coverage(const std::vector<ShardClaim>& claims, const std::vector<bool>& used, int units,
                          const std::function<std::vector<int>(int count)>& owner, std::vector<std::string>& problems) {
  std::vector<int> holder(static_cast<std::size_t>(units), -1);
  std::map<std::pair<int, int>, std::vector<int>> overlaps;  // (shard, shard) -> units both hold
  std::set<int> counts;
  std::map<int, std::vector<int>> cuts;  // shard count -> owner of each unit
  for (std::size_t i = 0; i < claims.size(); ++i) {
    if (!used[i]) continue;
    counts.insert(claims[i].shard.count);
    // A shard's units restate its K/N: they must be the cut's (an edited index or count is caught here).
    auto cut = cuts.find(claims[i].shard.count);
    if (cut == cuts.end()) cut = cuts.emplace(claims[i].shard.count, owner(claims[i].shard.count)).first;
    std::vector<int> expected;
    for (int unit = 0; unit < units; ++unit) {
      if (at(cut->second, unit) == claims[i].shard.index) expected.push_back(unit);
    }
    if (claims[i].held != expected) {
      problems.push_back(fmt::format("{} holds units {}, but shard {} of this job holds {}: its shard index or count "
                                     "does not match its units",
                                     shard_claim_name(claims[i]), describe_unit_ranges(claims[i].held),
                                     claims[i].shard.text(), describe_unit_ranges(expected)));
    }
    for (int unit : claims[i].held) {
      int& first = at(holder, unit);
      if (first < 0) {
        first = static_cast<int>(i);
      } else {
        overlaps[{first, static_cast<int>(i)}].push_back(unit);
      }
    }
  }
  for (const auto& [pair, shared] : overlaps) {
    problems.push_back(fmt::format("{} and {} overlap: both hold units {}", shard_claim_name(claims[pair.first]),
                                   shard_claim_name(claims[pair.second]), describe_unit_ranges(shared)));
  }
  std::vector<int> missing;
  for (int unit = 0; unit < units; ++unit) {
    if (at(holder, unit) < 0) missing.push_back(unit);
  }
  if (!missing.empty() && counts.size() == 1) {
    const int count = *counts.begin();
    const std::vector<int> shard_of = owner(count);
    std::map<int, std::vector<int>> by_shard;
    for (int unit : missing) by_shard[at(shard_of, unit)].push_back(unit);
    for (const auto& [index, lost] : by_shard) {
      problems.push_back(fmt::format("shard {}/{} is missing (units {})", index, count, describe_unit_ranges(lost)));
    }
  } else if (!missing.empty()) {
    problems.push_back(fmt::format("units {} are missing: in none of the shards", describe_unit_ranges(missing)));
  }
}

void fail_on_problems(const std::string& what, const std::vector<std::string>& problems) {
  if (problems.empty()) return;
  fail("{}: {} problem{}: {}", what, problems.size(), problems.size() == 1 ? "" : "s", join(problems, "; "));
}

}  // namespace tqlab
