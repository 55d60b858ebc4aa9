// The JSON documents tqlab writes as results, named by their "schema" key, and
// reading one back (`tqlab diff`, `tqlab report`) with errors that name the file.
//
//   tqlab.sweep/1     tqlab sweep                       (sweep/sweep_results.h, docs/SWEEP.md)
//   tqlab.bounds/2    tqlab verify-bounds --json        (theory/verify_bounds.h)
//   tqlab.codebook/1  tqlab codebook export --format json (theory/codebook_export.h)
//   tqlab.diff/1      tqlab diff --json                 (results/results_diff.h, docs/RESULTS.md)
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace tqlab {

inline constexpr std::string_view kSweepSchema = "tqlab.sweep/1";
inline constexpr std::string_view kBoundsSchema = "tqlab.bounds/2";
/// What verify-bounds wrote before schema 2 renamed its seed001 fields to reproduction
/// (results/comparable_results.h reads it as schema 2).
inline constexpr std::string_view kBoundsSchemaVersion1 = "tqlab.bounds/1";
inline constexpr std::string_view kCodebookSchema = "tqlab.codebook/1";
inline constexpr std::string_view kDiffSchema = "tqlab.diff/1";

/// Parses `path` as a results document, members in the file's order. InputError
/// "results 'PATH': ..." when it cannot be read, is not JSON, is not a JSON object
/// or has no "schema" string.
nlohmann::ordered_json read_results_document(const std::string& path);

/// The document's "schema" string (a document read by read_results_document has one).
std::string results_schema(const nlohmann::ordered_json& document);

}  // namespace tqlab
