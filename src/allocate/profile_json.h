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

/// Reads it back (what profile_json wrote, damages ignored). InputError naming `path` and the
/// key when it is not such a document.
Profile profile_from_json(const nlohmann::json& document, const std::string& path);

}  // namespace tqlab
