// A results document seen as `tqlab diff` compares it: a header of settings,
// rows matched by identity between two files, and in each row named quantities.
//
// One entry per schema (comparable_schemas()) says how its rows are found and keyed:
//
//   tqlab.sweep/1     rows = runs, keyed by "id" (k and v specs, window, sink) and the
//                     seed list; quantities = bits (bits_k, ..., compression) and every
//                     metric (its "mean" is the headline value, its "se" the standard
//                     error); per-seed, per-layer and per-head values, "se" and "std"
//                     are the metric's details. Header: config (less its run list), data,
//                     needle.
//   tqlab.bounds/2    rows = "rows" and "histograms" entries, keyed by dim and bits
//                     (tqlab.bounds/1 is read as schema 2, its seed001 fields renamed).
//   tqlab.codebook/1  rows = one per codebook, keyed by dim, bits and distribution.
//
// Generic rules, for everything a schema does not treat specially (so fields a
// later writer adds are compared without changes here):
//  * an object holding "mean" and "se" (or "standard_error") is one quantity whose
//    headline is the mean and whose other members are details;
//  * an array of numbers (or of such arrays) is one quantity with no headline,
//    compared element by element (its details);
//  * an array of objects names each element by a member that tells them apart
//    ("name", "estimator", "rotation", "inner_product", "layer"), e.g.
//    `checks[name=d_mse_empirical].value`, else by index;
//  * any other value is one quantity (numbers, strings, true/false, null);
//  * members named "timing" are left out unless asked for; "tqlab", "tqlab_version",
//    "git_commit", "path" and "origin" members (and a sweep's config.name) are context:
//    reported when they differ, never a difference.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tqlab {

/// One JSON scalar: null, a number, or text (strings; true/false as "true"/"false").
struct LeafValue {
  enum class Kind { null, number, text };
  Kind kind = Kind::null;
  double number = 0;
  std::string text;

  static LeafValue null_value() { return {}; }
  static LeafValue of_number(double value) { return {Kind::number, value, {}}; }
  static LeafValue of_text(std::string value) { return {Kind::text, 0, std::move(value)}; }
  bool is_number() const { return kind == Kind::number; }
  /// "null", the number in shortest round-trip form, or the text.
  std::string to_string() const;
  /// The scalar as JSON.
  nlohmann::ordered_json to_json() const;
};

/// A scalar at a key path ("config.metrics.needle.trials", "per_layer.attn_kl[layer=2]").
struct Leaf {
  std::string path;
  LeafValue value;
};

/// One compared quantity of a row.
struct Quantity {
  std::string name;                ///< what --metric matches: "attn_kl", "bits_kv", "theorem1.upper_bound"
  std::optional<LeafValue> headline;  ///< nullopt for an array, compared by its details only
  std::optional<double> se;        ///< the headline's standard error, when the document gives one
  std::vector<Leaf> details;       ///< values compared alongside (per seed, per layer, se, std, elements)
};

/// One row: a sweep run, a bounds (dim, bits) row, a codebook.
struct ComparableRow {
  std::string key;                 ///< identity, matched between files: "k=tq:b=3 v=tq:b=3 window=0 sink=0 seeds=0,1"
  std::vector<Quantity> quantities;  ///< in document order
  std::vector<Leaf> context;       ///< reported when they differ, never a difference ("origin")
};

struct ComparableDocument {
  std::string path;                ///< the file it was read from
  std::string schema;
  std::string row_noun;            ///< "run", "row", "codebook"
  std::string header_noun;         ///< what the header holds: "config and data", "settings and summary"
  std::vector<Leaf> context;       ///< version, git commit, BLAS, paths
  std::vector<Leaf> header;        ///< settings compared before the rows (config, data, ...)
  std::vector<ComparableRow> rows;
};

/// How one schema becomes a ComparableDocument.
struct ComparableSchema {
  std::string_view schema;         ///< "tqlab.sweep/1"
  std::string_view row_noun;       ///< "run"
  std::string_view matched_by;     ///< for docs and --help: "id and seed list"
  /// Builds the document; InputError "results 'PATH': KEY PATH: ..." when a row lacks its identity.
  ComparableDocument (*build)(const nlohmann::ordered_json& document, const std::string& path, bool include_timing);
};

/// Every schema `tqlab diff` reads.
const std::vector<ComparableSchema>& comparable_schemas();

/// The entry for `schema`, or nullptr.
const ComparableSchema* find_comparable_schema(std::string_view schema);

/// The document read by read_results_document, as its schema's entry builds it.
/// InputError naming the file when the schema is not one diff reads.
ComparableDocument comparable_document(const nlohmann::ordered_json& document, const std::string& path,
                                       bool include_timing);

/// True when `name` is `filter` or starts with `filter` followed by '.', '@' or '['
/// (`needle_top1` selects `needle_top1@0.5`, `theorem1` selects `theorem1.upper_bound`).
bool quantity_matches(std::string_view name, std::string_view filter);

}  // namespace tqlab
