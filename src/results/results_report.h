// `tqlab report RESULTS.json`: a sweep's runs as a table to paste into a paper
// or a pull request (Markdown) or a spreadsheet (CSV).
//
// One row per run, sorted by bits_kv (then attn_kl, then config order). Each
// chosen value is shown as "mean ± se" (se: the cluster standard error), with
// "(sd S)" added when the run has several seeds (S: the standard deviation over
// seeds); bits and compression have no error. Null values are "–".
// Two marks, both about bits_kv against attn_kl:
//  * front: the run is on the Pareto front — no other run has fewer or equal
//    bits_kv and a lower attn_kl;
//  * best: the lowest attn_kl among the runs with the same bits_kv (a bit budget).
// Runs without attn_kl (no queries in the dump) are on no front and best at no budget.
//
// CSV: one column per value with full precision (shortest round-trip form), a
// NAME_se column for each metric, a NAME_std column when any run has several
// seeds, and pareto_front / best_at_bits as true/false; fields holding a comma or
// a quote are quoted (RFC 4180).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/sweep_results_reader.h"

namespace tqlab {

enum class ReportFormat { md, csv };

/// "md", "csv".
std::string_view report_format_name(ReportFormat format);
/// Inverse of report_format_name; nullopt for any other word.
std::optional<ReportFormat> parse_report_format(std::string_view name);

struct ReportOptions {
  ReportFormat format = ReportFormat::md;
  std::vector<std::string> metrics;  ///< the value columns; empty: default_report_metrics
};

/// bits_kv, compression, k_rel_mse, attn_kl, attn_top1, needle_top1 at the
/// middle margin, e2e_ppl_delta_pct, e2e_kld and e2e_top1: those the file has.
std::vector<std::string> default_report_metrics(const SweepResultsFile& results);

/// A run's place in the table.
struct ReportRow {
  const ResultsRun* run = nullptr;
  bool pareto_front = false;
  bool best_at_bits = false;
};

/// The runs in table order, with their marks. The rows point into `results`,
/// which must outlive them.
std::vector<ReportRow> report_rows(const SweepResultsFile& results);

/// "0.0310 ± 0.0021": the se to two significant digits and the mean to the same
/// decimal place (at most 6 significant digits); "(sd S)" appended when `std`
/// is given; "–" for a missing mean; just the mean ("3.125") without an se.
std::string format_mean_se(const std::optional<double>& mean, const std::optional<double>& se,
                           const std::optional<double>& std = std::nullopt);

/// The whole table (and, for md, a legend below it). InputError naming the file
/// when a requested metric is in no run, listing the ones there are.
std::string report_text(const SweepResultsFile& results, const ReportOptions& options);

}  // namespace tqlab
