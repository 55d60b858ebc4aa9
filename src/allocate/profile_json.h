// A profile (allocate/profile.h) as JSON, in the allocation document and in the profile cache:
//
// {"kind": "offline" | "model", "granularity": "layer" | "layer-head",
//  "content_key": sha256 hex, "source": {what it was measured on: allocate/profile_cache.h},
//  "candidates": [spec, ...], "seeds": [...], "layers": [layer numbers], "components": [names],
//  "seconds": wall time, "layers_computed_share": model: share of the layers its passes ran (else null),
//  "units": [{"unit": "L0.h1.K", "layer": 0, "head": 1 (null: every head), "role": "key" | "value",
//             "values": values held,
//             "candidates": [{"spec", "bytes", "bits": 8 bytes / values,
//                             ["damage": under the document's objective,]
//                             "components": {NAME: [per seed]}}]}]}
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "allocate/objective.h"
#include "allocate/profile.h"

namespace tqlab {

/// The JSON above; with `objective`, each candidate's damage under it.
nlohmann::ordered_json profile_json(const Profile& profile, const Objective* objective);

/// Reads it back (what profile_json wrote, damages ignored), by io/read_back.h's rule: InputError
/// naming `path`, the key and the unit when it is not such a document, a number is not finite or
/// of the wrong sign (or beyond kReadBackLimit), a unit holds 0 values, a candidate 0 bytes or more
/// than 64 bits a value, candidates or seeds repeat, or the units are not those of its layers,
/// each once, in order (a layer's kv heads counted from its units). A shard's profile holds only
/// some cells (ProfileCells::some): values and bytes of 0 stand for those it did not measure.
enum class ProfileCells { all, some };
Profile profile_from_json(const nlohmann::json& document, const std::string& path,
                          ProfileCells cells = ProfileCells::all);

/// Whether `profile` (read from `path`) is the profile `expected` describes: the same kind,
/// granularity, candidates, seeds and units (only those fields of `expected` are read; the
/// command builds it from the config). InputError naming the first that differs, or the unit
/// missing, repeated or foreign.
void check_profile_fits(const Profile& profile, const Profile& expected, const std::string& path);

}  // namespace tqlab
