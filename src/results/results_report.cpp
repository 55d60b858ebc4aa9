#include "results/results_report.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/name_table.h"

namespace tqlab {
namespace {

constexpr std::string_view kNull = "–";
constexpr std::string_view kFrontMetric = "attn_kl";
constexpr std::string_view kBitsMetric = "bits_kv";
// Bit budgets are equal when they agree to this relative precision (they are
// ratios of byte counts, printed with 17 digits).
constexpr double kSameBits = 1e-12;

std::optional<double> mean_of(const ResultsRun& run, std::string_view name) {
  const RunValue* value = run.find(name);
  return value != nullptr ? value->mean : std::nullopt;
}

bool same_bits(double a, double b) { return std::fabs(a - b) <= kSameBits * std::max(std::fabs(a), std::fabs(b)); }

// Characters as a terminal shows them: UTF-8 continuation bytes take no column.
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad(std::string_view text, std::size_t width, bool right) {
  const std::string fill(width > display_width(text) ? width - display_width(text) : 0, ' ');
  return right ? fill + std::string(text) : std::string(text) + fill;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string full_precision(const std::optional<double>& value) {
  return value ? fmt::format("{}", *value) : std::string(kNull);
}

bool is_bits_value(const SweepResultsFile& results, const std::string& name) {
  return std::find(results.bits_names.begin(), results.bits_names.end(), name) != results.bits_names.end();
}

void check_metrics(const SweepResultsFile& results, const std::vector<std::string>& metrics) {
  const std::vector<std::string> names = results.value_names();
  for (const std::string& metric : metrics) {
    if (std::find(names.begin(), names.end(), metric) == names.end()) {
      fail("report: '{}' has no value '{}'; it has: {}", results.path, metric, fmt::join(names, ", "));
    }
  }
}

std::string markdown(const SweepResultsFile& results, const std::vector<ReportRow>& rows,
                     const std::vector<std::string>& metrics) {
  const bool exact_tokens = std::any_of(results.runs.begin(), results.runs.end(),
                                        [](const ResultsRun& run) { return run.window != 0 || run.sink != 0; });
  const bool several_seeds = std::any_of(results.runs.begin(), results.runs.end(),
                                         [](const ResultsRun& run) { return run.seeds.size() > 1; });
  const bool has_front = std::any_of(rows.begin(), rows.end(), [](const ReportRow& row) { return row.pareto_front; });

  std::vector<std::string> header = {"k", "v"};
  std::vector<bool> right = {false, false};
  if (exact_tokens) {
    header.insert(header.end(), {"window", "sink"});
    right.insert(right.end(), {true, true});
  }
  for (const std::string& metric : metrics) {
    header.push_back(metric);
    right.push_back(true);
  }
  header.insert(header.end(), {"front", "best"});
  right.insert(right.end(), {false, false});

  std::vector<std::vector<std::string>> cells;
  for (const ReportRow& row : rows) {
    const ResultsRun& run = *row.run;
    std::vector<std::string> line = {md_cell(run.k), md_cell(run.v)};
    if (exact_tokens) {
      line.push_back(std::to_string(run.window));
      line.push_back(std::to_string(run.sink));
    }
    for (const std::string& metric : metrics) {
      const RunValue* value = run.find(metric);
      line.push_back(value == nullptr ? std::string(kNull)
                                      : format_mean_se(value->mean, value->se,
                                                       run.seeds.size() > 1 ? value->std : std::nullopt));
    }
    const bool measured = mean_of(run, kFrontMetric).has_value();
    line.push_back(!measured ? std::string(kNull) : row.pareto_front ? "✓" : "");
    line.push_back(!measured ? std::string(kNull) : row.best_at_bits ? "✓" : "");
    cells.push_back(std::move(line));
  }

  std::vector<std::size_t> widths(header.size(), 3);
  for (std::size_t c = 0; c < header.size(); ++c) {
    widths[c] = std::max(widths[c], display_width(header[c]));
    for (const auto& line : cells) widths[c] = std::max(widths[c], display_width(line[c]));
  }
  const auto table_line = [&](const std::vector<std::string>& line) {
    std::string out = "|";
    for (std::size_t c = 0; c < line.size(); ++c) out += fmt::format(" {} |", pad(line[c], widths[c], right[c]));
    return out + "\n";
  };
  std::string out = table_line(header);
  out += "|";
  for (std::size_t c = 0; c < header.size(); ++c) {
    // Right-aligned columns end their rule in ':' (Markdown's alignment mark).
    out += fmt::format(" {}{} |", std::string(widths[c] - (right[c] ? 1 : 0), '-'), right[c] ? ":" : "");
  }
  out += "\n";
  for (const auto& line : cells) out += table_line(line);

  std::size_t seeds = 0;
  for (const ResultsRun& run : results.runs) seeds = std::max(seeds, run.seeds.size());
  out += fmt::format(
      "\nValues: mean ± standard error (clusters: layer × K/V head){}; {} means not measured. "
      "front: on the Pareto front of {} vs {} (no other run has fewer or equal bits and a lower {}); "
      "best: the lowest {} at its {}.{}\n",
      several_seeds ? fmt::format(", (sd …): standard deviation over {} seeds", seeds) : "", kNull, kBitsMetric,
      kFrontMetric, kFrontMetric, kFrontMetric, kBitsMetric,
      has_front ? "" : fmt::format(" No run has {}: no front.", kFrontMetric));
  return out;
}

std::string csv(const SweepResultsFile& results, const std::vector<ReportRow>& rows,
                const std::vector<std::string>& metrics) {
  const bool several_seeds = std::any_of(results.runs.begin(), results.runs.end(),
                                         [](const ResultsRun& run) { return run.seeds.size() > 1; });
  std::vector<std::string> header = {"k", "v", "window", "sink", "seeds"};
  for (const std::string& metric : metrics) {
    header.push_back(metric);
    if (is_bits_value(results, metric)) continue;
    header.push_back(metric + "_se");
    if (several_seeds) header.push_back(metric + "_std");
  }
  header.insert(header.end(), {"pareto_front", "best_at_bits"});
  std::string out = fmt::format("{}\n", fmt::join(header, ","));
  for (const ReportRow& row : rows) {
    const ResultsRun& run = *row.run;
    std::vector<std::string> line = {csv_field(run.k), csv_field(run.v), std::to_string(run.window),
                                     std::to_string(run.sink), csv_field(fmt::format("{}", fmt::join(run.seeds, " ")))};
    for (const std::string& metric : metrics) {
      const RunValue* value = run.find(metric);
      const RunValue empty;
      const RunValue& shown = value != nullptr ? *value : empty;
      line.push_back(full_precision(shown.mean));
      if (is_bits_value(results, metric)) continue;
      line.push_back(full_precision(shown.se));
      if (several_seeds) line.push_back(full_precision(shown.std));
    }
    const bool measured = mean_of(run, kFrontMetric).has_value();
    line.push_back(measured ? (row.pareto_front ? "true" : "false") : std::string(kNull));
    line.push_back(measured ? (row.best_at_bits ? "true" : "false") : std::string(kNull));
    out += fmt::format("{}\n", fmt::join(line, ","));
  }
  return out;
}

}  // namespace

namespace {

constexpr auto kReportFormatNames =
    make_name_table<ReportFormat>({{ReportFormat::md, "md"}, {ReportFormat::csv, "csv"}});

}  // namespace

std::string_view report_format_name(ReportFormat format) { return kReportFormatNames.name(format); }

std::optional<ReportFormat> parse_report_format(std::string_view name) { return kReportFormatNames.parse(name); }

std::vector<std::string> default_report_metrics(const SweepResultsFile& results) {
  const std::vector<std::string> names = results.value_names();
  std::vector<std::string> metrics;
  for (const std::string& name : {std::string("bits_kv"), std::string("compression"), std::string("k_rel_mse"),
                                  std::string("attn_kl"), std::string("attn_top1"), results.middle_needle_metric(),
                                  std::string("e2e_ppl_delta_pct"), std::string("e2e_kld"), std::string("e2e_top1")}) {
    if (!name.empty() && std::find(names.begin(), names.end(), name) != names.end()) metrics.push_back(name);
  }
  return metrics;
}

std::vector<ReportRow> report_rows(const SweepResultsFile& results) {
  const std::size_t count = results.runs.size();
  std::vector<std::optional<double>> bits(count), kl(count);
  for (std::size_t i = 0; i < count; ++i) {
    bits[i] = mean_of(results.runs[i], kBitsMetric);
    kl[i] = mean_of(results.runs[i], kFrontMetric);
  }
  std::vector<ReportRow> rows(count);
  for (std::size_t i = 0; i < count; ++i) {
    rows[i].run = &results.runs[i];
    if (!bits[i] || !kl[i]) continue;
    bool dominated = false, beaten_at_budget = false;
    for (std::size_t j = 0; j < count; ++j) {
      if (j == i || !bits[j] || !kl[j]) continue;
      const bool fewer_or_equal = *bits[j] <= *bits[i] || same_bits(*bits[j], *bits[i]);
      dominated = dominated || (fewer_or_equal && *kl[j] < *kl[i]);
      beaten_at_budget = beaten_at_budget || (same_bits(*bits[j], *bits[i]) && *kl[j] < *kl[i]);
    }
    rows[i].pareto_front = !dominated;
    rows[i].best_at_bits = !beaten_at_budget;
  }
  // By bits, then attn_kl (unmeasured last), then config order.
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  const auto key_less = [](const std::optional<double>& x, const std::optional<double>& y) {
    if (x.has_value() != y.has_value()) return x.has_value();
    return x.has_value() && *x < *y;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    if (key_less(bits[x], bits[y])) return true;
    if (key_less(bits[y], bits[x])) return false;
    return key_less(kl[x], kl[y]);
  });
  std::vector<ReportRow> sorted;
  for (std::size_t index : order) sorted.push_back(rows[index]);
  return sorted;
}

std::string format_mean_se(const std::optional<double>& mean, const std::optional<double>& se,
                           const std::optional<double>& std) {
  if (!mean) return std::string(kNull);
  const std::string spread = std ? fmt::format(" (sd {:.2g})", *std) : "";
  if (!se || !(*se > 0) || !std::isfinite(*se)) return fmt::format("{:.4g}{}", *mean, spread);
  // Two significant digits of the se fix the decimal place of both numbers.
  const auto decimals_for = [](double error) {
    return std::max(0, 1 - static_cast<int>(std::floor(std::log10(error))));
  };
  const int magnitude = *mean == 0 ? 0 : static_cast<int>(std::floor(std::log10(std::fabs(*mean))));
  const int decimals = decimals_for(*se);
  if (magnitude + 1 + decimals > 6) return fmt::format("{:.6g} ± {:.2g}{}", *mean, *se, spread);
  if (decimals > 6 && magnitude < -2) {
    // Small numbers share a power of ten: (3.759 ± 0.024)e-05, not 0.00003759 ± 0.00000024.
    const double scale = std::pow(10.0, -magnitude);
    const int scaled = decimals_for(*se * scale);
    return fmt::format("({:.{}f} ± {:.{}f})e{:03d}{}", *mean * scale, scaled, *se * scale, scaled, magnitude, spread);
  }
  return fmt::format("{:.{}f} ± {:.{}f}{}", *mean, decimals, *se, decimals, spread);
}

std::string report_text(const SweepResultsFile& results, const ReportOptions& options) {
  const std::vector<std::string> metrics = options.metrics.empty() ? default_report_metrics(results) : options.metrics;
  check_metrics(results, metrics);
  const std::vector<ReportRow> rows = report_rows(results);
  return options.format == ReportFormat::md ? markdown(results, rows, metrics) : csv(results, rows, metrics);
}

}  // namespace tqlab
