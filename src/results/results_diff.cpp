#include "results/results_diff.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/name_table.h"
#include "results/results_document.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

using Json = nlohmann::ordered_json;

// Quantities shown per row in the human report; --json lists every one.
constexpr std::size_t kShownPerRow = 20;
constexpr std::size_t kNameWidth = 36;

bool numbers_differ(double a, double b, const DiffOptions& options) {
  if (a == b) return false;
  if (!std::isfinite(a) || !std::isfinite(b)) return true;
  return std::fabs(b - a) > std::max(options.atol, options.rtol * std::max(std::fabs(a), std::fabs(b)));
}

bool values_differ(const LeafValue& a, const LeafValue& b, const DiffOptions& options) {
  if (a.kind != b.kind) return true;
  switch (a.kind) {
    case LeafValue::Kind::null: return false;
    case LeafValue::Kind::number: return numbers_differ(a.number, b.number, options);
    case LeafValue::Kind::text: return a.text != b.text;
  }
  return true;
}

// The leaves that differ, matched by path: A's order, then those only in B.
std::vector<LeafDiff> diff_leaves(const std::vector<Leaf>& a, const std::vector<Leaf>& b, const DiffOptions& options,
                                  std::size_t* compared = nullptr) {
  std::map<std::string_view, const Leaf*> in_b;
  for (const Leaf& leaf : b) in_b.emplace(leaf.path, &leaf);
  std::vector<LeafDiff> out;
  std::map<std::string_view, bool> seen;
  for (const Leaf& leaf : a) {
    seen.emplace(leaf.path, true);
    const auto match = in_b.find(leaf.path);
    if (match == in_b.end()) {
      out.push_back({leaf.path, leaf.value, std::nullopt, DiffStatus::only_a});
      continue;
    }
    if (compared != nullptr) ++*compared;
    if (values_differ(leaf.value, match->second->value, options)) {
      out.push_back({leaf.path, leaf.value, match->second->value, DiffStatus::differs});
    }
  }
  for (const Leaf& leaf : b) {
    if (!seen.contains(leaf.path)) out.push_back({leaf.path, std::nullopt, leaf.value, DiffStatus::only_b});
  }
  return out;
}

QuantityDiff diff_quantity(const Quantity* a, const Quantity* b, const DiffOptions& options) {
  QuantityDiff out;
  const Quantity& either = a != nullptr ? *a : *b;
  out.name = either.name;
  out.has_headline = either.headline.has_value();
  if (a == nullptr || b == nullptr) {
    out.status = a == nullptr ? DiffStatus::only_b : DiffStatus::only_a;
    (a == nullptr ? out.b : out.a) = either.headline;
    return out;
  }
  out.a = a->headline;
  out.b = b->headline;
  out.headline_differs = a->headline.has_value() != b->headline.has_value();
  if (a->headline && b->headline) {
    out.headline_differs = values_differ(*a->headline, *b->headline, options);
    if (a->headline->is_number() && b->headline->is_number()) {
      const double change = b->headline->number - a->headline->number;
      out.abs_change = change;
      if (a->headline->number != 0) out.rel_change = change / std::fabs(a->headline->number);
    }
  }
  if (a->se && b->se) out.combined_se = std::sqrt(*a->se * *a->se + *b->se * *b->se);
  out.detail_differences = diff_leaves(a->details, b->details, options, &out.details_compared);
  if (out.headline_differs) {
    const bool within = out.abs_change && out.combined_se && std::fabs(*out.abs_change) <= *out.combined_se;
    out.status = within ? DiffStatus::within_se : DiffStatus::differs;
  } else {
    out.status = out.detail_differences.empty() ? DiffStatus::same : DiffStatus::differs;
  }
  return out;
}

bool selected(const Quantity& quantity, const DiffOptions& options) {
  if (options.metrics.empty()) return true;
  return std::any_of(options.metrics.begin(), options.metrics.end(),
                     [&](const std::string& filter) { return quantity_matches(quantity.name, filter); });
}

RowDiff diff_row(const ComparableRow* a, const ComparableRow* b, const DiffOptions& options) {
  RowDiff out;
  out.key = a != nullptr ? a->key : b->key;
  if (a == nullptr || b == nullptr) {
    out.status = a == nullptr ? DiffStatus::only_b : DiffStatus::only_a;
    return out;
  }
  std::map<std::string_view, const Quantity*> in_b;
  for (const Quantity& quantity : b->quantities) in_b.emplace(quantity.name, &quantity);
  std::map<std::string_view, bool> in_a;
  for (const Quantity& quantity : a->quantities) {
    in_a.emplace(quantity.name, true);
    if (!selected(quantity, options)) continue;
    const auto match = in_b.find(quantity.name);
    out.quantities.push_back(diff_quantity(&quantity, match == in_b.end() ? nullptr : match->second, options));
  }
  for (const Quantity& quantity : b->quantities) {
    if (!in_a.contains(quantity.name) && selected(quantity, options)) {
      out.quantities.push_back(diff_quantity(nullptr, &quantity, options));
    }
  }
  for (const QuantityDiff& quantity : out.quantities) {
    if (quantity.status == DiffStatus::within_se && out.status == DiffStatus::same) out.status = DiffStatus::within_se;
    if (quantity.status != DiffStatus::same && quantity.status != DiffStatus::within_se)
      out.status = DiffStatus::differs;
  }
  out.context = diff_leaves(a->context, b->context, options);
  return out;
}

// Every --metric must select something, so that a typo is not a silent "no difference".
void check_metric_filters(const ComparableDocument& a, const ComparableDocument& b, const DiffOptions& options) {
  std::vector<std::string> names;
  for (const ComparableDocument* document : {&a, &b}) {
    for (const ComparableRow& row : document->rows) {
      for (const Quantity& quantity : row.quantities) {
        if (std::find(names.begin(), names.end(), quantity.name) == names.end()) names.push_back(quantity.name);
      }
    }
  }
  for (const std::string& filter : options.metrics) {
    const bool found = std::any_of(names.begin(), names.end(),
                                   [&](const std::string& name) { return quantity_matches(name, filter); });
    if (found) continue;
    const std::size_t shown = std::min<std::size_t>(names.size(), 30);
    fail("diff: --metric '{}' selects nothing in '{}' or '{}'; their quantities are: {}{}", filter, a.path, b.path,
         fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
         names.size() > shown ? fmt::format(", ... ({} in all)", names.size()) : "");
  }
}

std::string leaf_text(const std::optional<LeafValue>& value) {
  if (!value) return "(absent)";
  if (value->is_number()) return fmt::format("{:.10g}", value->number);
  return value->to_string();
}

Json leaf_json(const std::optional<LeafValue>& value) { return value ? value->to_json() : Json(nullptr); }

Json optional_number(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

Json leaf_diffs_json(const std::vector<LeafDiff>& diffs) {
  Json out = Json::array();
  for (const LeafDiff& diff : diffs) {
    out.push_back({{"path", diff.path},
                   {"a", leaf_json(diff.a)},
                   {"b", leaf_json(diff.b)},
                   {"status", diff_status_name(diff.status)}});
  }
  return out;
}

std::string leaf_change_line(const LeafDiff& diff) {
  return fmt::format("{}: {} -> {}", diff.path, leaf_text(diff.a), leaf_text(diff.b));
}

// "3 of 20 details differ, largest at per_layer.attn_kl[layer=2]: 0.1 -> 0.2".
std::string details_summary(const QuantityDiff& quantity) {
  if (quantity.detail_differences.empty()) return "";
  const LeafDiff* largest = &quantity.detail_differences.front();
  double largest_change = -1;
  for (const LeafDiff& diff : quantity.detail_differences) {
    if (diff.a && diff.b && diff.a->is_number() && diff.b->is_number()) {
      const double change = std::fabs(diff.b->number - diff.a->number);
      if (change > largest_change) {
        largest_change = change;
        largest = &diff;
      }
    }
  }
  const std::size_t total = std::max(quantity.details_compared, quantity.detail_differences.size());
  if (quantity.detail_differences.size() == 1) {
    return fmt::format("1 of {} details differs: {}", total, leaf_change_line(*largest));
  }
  return fmt::format("{} of {} details differ, {}{}", quantity.detail_differences.size(), total,
                     largest_change >= 0 ? "largest " : "e.g. ", leaf_change_line(*largest));
}

std::string percent(double relative) { return fmt::format("{:+.3g}%", 100 * relative); }

// Appends one line per leaf difference to `out`: the path, padded to the longest, then A's and B's values.
void append_leaf_lines(std::string& out, const std::vector<LeafDiff>& diffs) {
  std::size_t width = 0;
  for (const LeafDiff& diff : diffs) width = std::max(width, diff.path.size());
  for (const LeafDiff& diff : diffs) {
    out += fmt::format("  {:<{}}  {}  ->  {}\n", diff.path, width, leaf_text(diff.a), leaf_text(diff.b));
  }
}

// Appends the context (the document's, then each row's under its key), the warnings, and the header's
// differences.
void append_context_and_header(std::string& out, const DiffResult& result) {
  std::vector<LeafDiff> context = result.context;
  for (const RowDiff& row : result.rows) {
    for (const LeafDiff& diff : row.context)
      context.push_back({row.key + ": " + diff.path, diff.a, diff.b, diff.status});
  }
  if (!context.empty()) {
    out += "context (reported, not compared):\n";
    append_leaf_lines(out, context);
  }
  for (const std::string& warning : result.warnings) out += fmt::format("WARNING: {}\n", warning);
  if (!result.header.empty()) {
    out += fmt::format("{} differences:\n", result.header_noun);
    append_leaf_lines(out, result.header);
  }
}

// Appends the keys of the rows only in A, then of those only in B, each list under its count.
void append_one_sided_rows(std::string& out, const DiffResult& result) {
  for (DiffStatus side : {DiffStatus::only_a, DiffStatus::only_b}) {
    const std::size_t count = result.count_rows(side);
    if (count == 0) continue;
    out += fmt::format("{}s only in {} ({}):\n", result.row_noun, side == DiffStatus::only_a ? "A" : "B", count);
    for (const RowDiff& row : result.rows) {
      if (row.status == side) out += fmt::format("  {}\n", row.key);
    }
  }
}

// One quantity's line of a row's table, its name padded to `name_width`: A, B, the change and relative change
// of the headline when it moved, and a note (~ within the standard error, only in A or B, or which details
// differ); no trailing spaces.
std::string quantity_line(const QuantityDiff& quantity, std::size_t name_width) {
  std::string a = leaf_text(quantity.a), b = leaf_text(quantity.b);
  if (!quantity.has_headline) {
    a = quantity.status == DiffStatus::only_b ? "(absent)" : "(values)";
    b = quantity.status == DiffStatus::only_a ? "(absent)" : "(values)";
  }
  const bool moved = quantity.headline_differs && quantity.abs_change;
  const std::string change = moved ? fmt::format("{:+.3g}", *quantity.abs_change) : "";
  const std::string relative = moved && quantity.rel_change ? percent(*quantity.rel_change) : "";
  std::string note;
  if (quantity.status == DiffStatus::within_se) {
    note = "~";
  } else if (quantity.status == DiffStatus::only_a || quantity.status == DiffStatus::only_b) {
    note = fmt::format("only in {}", quantity.status == DiffStatus::only_a ? "A" : "B");
  } else if (!quantity.headline_differs) {
    note = details_summary(quantity);  // the headline agrees: say which details do not
  }
  std::string line = fmt::format("  {:<{}}  {:>17}  {:>17}  {:>10}  {:>9}  {}", quantity.name, name_width, a, b, change,
                                 relative, note);
  line.erase(line.find_last_not_of(' ') + 1);
  return line;
}

// Appends a differing row's table of its quantities that are not the same (the first kShownPerRow of them);
// returns whether a line shown is within the standard error (marked ~).
bool append_row_table(std::string& out, const DiffResult& result, const RowDiff& row) {
  std::vector<const QuantityDiff*> shown;
  for (const QuantityDiff& quantity : row.quantities) {
    if (quantity.status != DiffStatus::same) shown.push_back(&quantity);
  }
  std::size_t name_width = 8;  // longer names than kNameWidth push their line's columns right
  for (const QuantityDiff* quantity : shown) name_width = std::clamp(quantity->name.size(), name_width, kNameWidth);
  out += fmt::format("{} {}\n", result.row_noun, row.key);
  out += fmt::format("  {:<{}}  {:>17}  {:>17}  {:>10}  {:>9}\n", "quantity", name_width, "A", "B", "change",
                     "relative");
  bool any_within_se = false;
  for (std::size_t i = 0; i < shown.size() && i < kShownPerRow; ++i) {
    any_within_se = any_within_se || shown[i]->status == DiffStatus::within_se;
    out += quantity_line(*shown[i], name_width) + "\n";
  }
  if (shown.size() > kShownPerRow) {
    out += fmt::format("  ... and {} more (--json lists them all)\n", shown.size() - kShownPerRow);
  }
  return any_within_se;
}

// Appends the closing lines: what ~ means (when `any_within_se`), the rows' counts, and the result with its
// exit code.
void append_summary(std::string& out, const DiffResult& result, bool any_within_se) {
  if (any_within_se) {
    out += fmt::format("~ : within the combined standard error sqrt(se_A^2 + se_B^2); {}\n",
                       result.options.ignore_within_se ? "not counted (--ignore-within-se)"
                                                       : "still a difference (--ignore-within-se to not count it)");
  }
  const std::size_t matched = result.rows.size() - result.count_rows(DiffStatus::only_a) -
                              result.count_rows(DiffStatus::only_b);
  out += fmt::format(
      "{} {}s in both: {} same, {} within the standard error, {} differ; {} only in A, {} only in B; {} {} "
      "difference{}\n",
      matched, result.row_noun, result.count_rows(DiffStatus::same), result.count_rows(DiffStatus::within_se),
      result.count_rows(DiffStatus::differs), result.count_rows(DiffStatus::only_a),
      result.count_rows(DiffStatus::only_b), result.header.size(), result.header_noun,
      result.header.size() == 1 ? "" : "s");
  out += result.differs() ? fmt::format("result: the files differ (exit {})\n", kExitDifference)
                          : fmt::format("result: no difference beyond the tolerances (exit {})\n", kExitOk);
}

}  // namespace

void validate_diff_options(const DiffOptions& options) {
  if (!(options.rtol >= 0) || !std::isfinite(options.rtol)) {
    fail("diff: --rtol {} must be a non-negative number", options.rtol);
  }
  if (!(options.atol >= 0) || !std::isfinite(options.atol)) {
    fail("diff: --atol {} must be a non-negative number", options.atol);
  }
  for (const std::string& metric : options.metrics) {
    if (metric.empty()) fail("diff: --metric needs a name, e.g. --metric attn_kl");
  }
}

std::string_view diff_status_name(DiffStatus status) {
  constexpr auto kNames = make_name_table<DiffStatus>({{DiffStatus::same, "same"},
                                                       {DiffStatus::within_se, "within_se"},
                                                       {DiffStatus::differs, "differs"},
                                                       {DiffStatus::only_a, "only_a"},
                                                       {DiffStatus::only_b, "only_b"}});
  return kNames.name(status);
}

std::size_t DiffResult::count_rows(DiffStatus status) const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [&](const RowDiff& row) { return row.status == status; }));
}

std::size_t DiffResult::count_quantities(DiffStatus status) const {
  std::size_t count = 0;
  for (const RowDiff& row : rows) {
    for (const QuantityDiff& quantity : row.quantities) count += quantity.status == status ? 1 : 0;
  }
  return count;
}

bool DiffResult::differs() const {
  if (!header.empty()) return true;
  for (const RowDiff& row : rows) {
    if (row.status == DiffStatus::within_se && options.ignore_within_se) continue;
    if (row.status != DiffStatus::same) return true;
  }
  return false;
}

int DiffResult::exit_code() const { return differs() ? kExitDifference : kExitOk; }

DiffResult diff_documents(const ComparableDocument& a, const ComparableDocument& b, const DiffOptions& options) {
  validate_diff_options(options);
  if (a.schema != b.schema) {
    fail("diff: '{}' is {} but '{}' is {}; diff compares two documents of one schema", a.path, a.schema, b.path,
         b.schema);
  }
  check_metric_filters(a, b, options);
  DiffResult result;
  result.options = options;
  result.schema = a.schema;
  result.row_noun = a.row_noun;
  result.header_noun = a.header_noun;
  result.path_a = a.path;
  result.path_b = b.path;
  result.context = diff_leaves(a.context, b.context, options);
  result.header = diff_leaves(a.header, b.header, options);
  for (const LeafDiff& diff : result.header) {
    if (diff.path.ends_with("sha256") && diff.a && diff.b) {
      // Twelve hex digits tell two files apart; the full digests are in the header lines.
      result.warnings.push_back(fmt::format("the data differ: {} is {}… in '{}' but {}… in '{}'; the {}s were "
                                            "measured on different tensors",
                                            diff.path, diff.a->to_string().substr(0, 12), a.path,
                                            diff.b->to_string().substr(0, 12), b.path, a.row_noun));
    }
  }
  std::map<std::string_view, const ComparableRow*> in_b;
  for (const ComparableRow& row : b.rows) in_b.emplace(row.key, &row);
  std::map<std::string_view, bool> in_a;
  for (const ComparableRow& row : a.rows) {
    in_a.emplace(row.key, true);
    const auto match = in_b.find(row.key);
    result.rows.push_back(diff_row(&row, match == in_b.end() ? nullptr : match->second, options));
  }
  for (const ComparableRow& row : b.rows) {
    if (!in_a.contains(row.key)) result.rows.push_back(diff_row(nullptr, &row, options));
  }
  return result;
}

DiffResult diff_results_files(const std::string& path_a, const std::string& path_b, const DiffOptions& options) {
  validate_diff_options(options);
  const nlohmann::ordered_json document_a = read_results_document(path_a);
  const nlohmann::ordered_json document_b = read_results_document(path_b);
  // Schemas are compared by diff_documents, after an older schema is read as the one that replaced it.
  return diff_documents(comparable_document(document_a, path_a, options.timing),
                        comparable_document(document_b, path_b, options.timing), options);
}

nlohmann::ordered_json diff_json(const DiffResult& result) {
  Json out;
  out["schema"] = kDiffSchema;
  out["tqlab"] = {{"version", TQLAB_VERSION}, {"git_commit", TQLAB_GIT_COMMIT}};
  out["a"] = {{"path", result.path_a}, {"schema", result.schema}};
  out["b"] = {{"path", result.path_b}, {"schema", result.schema}};
  out["options"] = {{"rtol", result.options.rtol},
                    {"atol", result.options.atol},
                    {"metrics", result.options.metrics},
                    {"timing", result.options.timing},
                    {"ignore_within_se", result.options.ignore_within_se}};
  out["context"] = leaf_diffs_json(result.context);
  out["warnings"] = result.warnings;
  out["header"] = leaf_diffs_json(result.header);
  Json rows = Json::array();
  for (const RowDiff& row : result.rows) {
    Json quantities = Json::array();
    for (const QuantityDiff& quantity : row.quantities) {
      quantities.push_back({{"name", quantity.name},
                            {"a", quantity.has_headline ? leaf_json(quantity.a) : Json(nullptr)},
                            {"b", quantity.has_headline ? leaf_json(quantity.b) : Json(nullptr)},
                            {"abs_change", optional_number(quantity.abs_change)},
                            {"rel_change", optional_number(quantity.rel_change)},
                            {"combined_se", optional_number(quantity.combined_se)},
                            {"status", diff_status_name(quantity.status)},
                            {"details_compared", quantity.details_compared},
                            {"detail_differences", leaf_diffs_json(quantity.detail_differences)}});
    }
    rows.push_back({{"key", row.key},
                    {"status", diff_status_name(row.status)},
                    {"quantities", quantities},
                    {"context", leaf_diffs_json(row.context)}});
  }
  out["rows"] = rows;
  Json row_counts, quantity_counts;
  for (DiffStatus status :
       {DiffStatus::same, DiffStatus::within_se, DiffStatus::differs, DiffStatus::only_a, DiffStatus::only_b}) {
    row_counts[std::string(diff_status_name(status))] = result.count_rows(status);
    quantity_counts[std::string(diff_status_name(status))] = result.count_quantities(status);
  }
  out["summary"] = {{"row_noun", result.row_noun},
                    {"rows", row_counts},
                    {"quantities", quantity_counts},
                    {"header_differences", result.header.size()}};
  out["differs"] = result.differs();
  out["exit_code"] = result.exit_code();
  return out;
}

std::string diff_text(const DiffResult& result) {
  std::string out = fmt::format("tqlab diff: A = '{}', B = '{}' ({}); rtol {:g}, atol {:g}{}\n", result.path_a,
                                result.path_b, result.schema, result.options.rtol, result.options.atol,
                                result.options.metrics.empty()
                                    ? std::string()
                                    : fmt::format("; only {}", fmt::join(result.options.metrics, ", ")));
  append_context_and_header(out, result);
  append_one_sided_rows(out, result);
  bool any_within_se = false;
  for (const RowDiff& row : result.rows) {
    if (row.status != DiffStatus::differs && row.status != DiffStatus::within_se) continue;
    if (append_row_table(out, result, row)) any_within_se = true;
  }
  append_summary(out, result, any_within_se);
  return out;
}

}  // namespace tqlab
