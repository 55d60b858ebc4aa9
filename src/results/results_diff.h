// `tqlab diff A.json B.json`: two results documents of one schema compared
// row by row, quantity by quantity (results/comparable_results.h says what the
// rows and quantities of each schema are).
//
// Two numbers a, b differ when |b − a| > max(atol, rtol·max(|a|, |b|)); two
// other scalars when they are not equal; null equals only null. The defaults,
// rtol 1e-9 and atol 1e-12, call a rerun on the same machine "no difference"
// (it gives the same bytes) and also forgive the last-bit changes another libm
// can make, while any change a code change makes to a metric shows.
//
// A quantity's status:
//  * same: its headline and every detail agree;
//  * within_se: the headline differs by no more than the combined standard error
//    √(se_A² + se_B²) (both files give an se): marked "~", a change the seeds'
//    noise explains. It counts as a difference for the exit code unless
//    `ignore_within_se` (a code change that moves results, however little, is
//    what a regression check must see; comparing across machines or seeds, pass
//    --ignore-within-se);
//  * differs: the headline differs by more, or it agrees and a detail differs
//    (a per-layer, per-seed or per-head value, the se or std);
//  * only_a / only_b: the quantity is in one file.
// Header leaves (config, data, settings) that differ are differences; context
// (version, git commit, BLAS, paths, a run's origin) is reported only. Rows in one
// file only are differences. A different data sha256 adds a warning.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "results/comparable_results.h"

namespace tqlab {

struct DiffOptions {
  double rtol = 1e-9;                ///< relative tolerance (>= 0)
  double atol = 1e-12;               ///< absolute tolerance (>= 0)
  std::vector<std::string> metrics;  ///< compare only quantities these select (quantity_matches); empty: all
  bool timing = false;               ///< compare "timing" sections too
  bool ignore_within_se = false;     ///< within-SE changes do not make the exit code 1
};

/// InputError naming the flag when a tolerance is negative or not a number.
void validate_diff_options(const DiffOptions& options);

enum class DiffStatus { same, within_se, differs, only_a, only_b };

/// "same", "within_se", "differs", "only_a", "only_b".
std::string_view diff_status_name(DiffStatus status);

/// Two scalars at one path; a side is nullopt when the path is in the other file only.
struct LeafDiff {
  std::string path;
  std::optional<LeafValue> a, b;
  DiffStatus status = DiffStatus::same;  ///< same, differs, only_a or only_b
};

struct QuantityDiff {
  std::string name;
  bool has_headline = true;          ///< false for arrays (compared by details only)
  std::optional<LeafValue> a, b;     ///< headlines; nullopt when absent from that file
  bool headline_differs = false;
  std::optional<double> abs_change;  ///< b − a, both numbers
  std::optional<double> rel_change;  ///< (b − a)/|a|, a ≠ 0
  std::optional<double> combined_se; ///< √(se_A² + se_B²) when both files give an se
  DiffStatus status = DiffStatus::same;
  std::size_t details_compared = 0;
  std::vector<LeafDiff> detail_differences;  ///< the details that differ, in document order
};

struct RowDiff {
  std::string key;
  DiffStatus status = DiffStatus::same;  ///< the worst of its quantities: differs > within_se > same
  std::vector<QuantityDiff> quantities;  ///< every compared quantity, A's order then B's new ones
  std::vector<LeafDiff> context;         ///< differing context (a run's origin)
};

struct DiffResult {
  DiffOptions options;
  std::string schema;
  std::string row_noun;              ///< "run", "row", "codebook"
  std::string header_noun;           ///< "config and data", ...
  std::string path_a, path_b;
  std::vector<LeafDiff> context;     ///< differing context leaves
  std::vector<std::string> warnings; ///< e.g. the data's sha256 differs
  std::vector<LeafDiff> header;      ///< differing header leaves, in document order
  std::vector<RowDiff> rows;         ///< A's rows in order, then B's new ones

  std::size_t count_rows(DiffStatus status) const;
  std::size_t count_quantities(DiffStatus status) const;
  /// Anything beyond the tolerances: a header difference, a row in one file, a
  /// quantity that differs (or changed within its SE, unless ignore_within_se).
  bool differs() const;
  /// kExitDifference when differs(), else kExitOk.
  int exit_code() const;
};

/// Compares two documents of one schema. InputError when the schemas differ or
/// when a --metric name selects nothing in either file (listing the names).
DiffResult diff_documents(const ComparableDocument& a, const ComparableDocument& b, const DiffOptions& options);

/// Reads both files (read_results_document), checks that they hold one schema
/// that diff reads, and compares them. InputError naming the file otherwise.
DiffResult diff_results_files(const std::string& path_a, const std::string& path_b, const DiffOptions& options);

/// The result as a document, schema tqlab.diff/1 (docs/RESULTS.md).
nlohmann::ordered_json diff_json(const DiffResult& result);

/// The human report: context, warnings, header differences, rows in one file,
/// then per row the quantities that changed (old, new, change, relative change,
/// "~" within the combined SE), and a summary line.
std::string diff_text(const DiffResult& result);

}  // namespace tqlab
