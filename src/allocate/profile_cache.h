// Profiles cached by content, so that solving again at another budget (or with another key
// weight) measures nothing.
//
// The content key is the sha256 of the profile's source: a JSON object of everything its
// numbers depend on — the kind, the granularity (the offline profile is always measured per
// head), the candidates, the seeds, tqlab's version and git commit, the numerics (tqlab's, or
// an engine's: Profile::numerics), and
//   data:  the file's sha256 and bytes, the name templates, layout, layer selection, nonfinite
//          mode, and the attention options (chunk, causal, scale, window_mode);
//   model: config.json's and every weight file's sha256, the tokens' (and tokenizer's) sha256,
//          add_special, ctx, chunks, score, bos, window mode; an offline profile of a model's
//          own Q/K/V has these instead of a data file.
// The cache file is DIR/tqlab-profile-KIND-KEY16.json (KEY16: the key's first 16 hex digits)
// holding {"schema": "tqlab.profile/1", "profile": profile_json()}; DIR defaults to the
// allocation's output folder. A file whose content key differs, or that cannot be read, is
// not used (a warning says why) and is written over.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "allocate/profile.h"
#include "sweep/sweep_config.h"

namespace tqlab {

struct SweepModel;

/// The source object above. `model`: the config's model block opened (for its identity and
/// tokens), or null without one. `numerics`: Profile::numerics.
nlohmann::ordered_json profile_source(const SweepConfig& config, const SweepModel* model, ProfileKind kind,
                                      Granularity granularity, const std::vector<std::string>& candidates,
                                      const std::string& numerics);

/// sha256 (hex) of the source's compact JSON.
std::string profile_content_key(const nlohmann::ordered_json& source);

/// DIR/tqlab-profile-KIND-KEY16.json.
std::string profile_cache_path(const std::string& folder, ProfileKind kind, const std::string& key);

/// The tqlab.profile/1 document at `path` (a cache file, or what `tqlab merge` makes of profile
/// shards), checked as allocate/profile_json.h reads profiles back and, unless null, to fit
/// `expected` (check_profile_fits). InputError naming the file and what is wrong.
Profile read_profile_document(const std::string& path, const Profile* expected);

/// The cached profile at `path` when its content key is `key` and it fits `expected`; nullopt when
/// absent. A file that cannot be read, holds another key or does not pass the read-back checks is
/// nullopt too, and `warning` says why (the caller measures again and writes over it).
std::optional<Profile> read_cached_profile(const std::string& path, const std::string& key, const Profile& expected,
                                           std::string& warning);

/// Writes `profile` to `path` atomically.
void write_cached_profile(const std::string& path, const Profile& profile);

}  // namespace tqlab
