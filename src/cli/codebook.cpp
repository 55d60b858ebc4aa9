// tqlab codebook export: Lloyd–Max codebooks for other runtimes (src/theory/codebook_export.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "quant/codebook.h"
#include "theory/codebook_export.h"

namespace tqlab::cli {
namespace {

struct CodebookExportOptions {
  std::vector<int> dims;
  std::vector<int> bits;
  std::string distribution = "beta";
  std::string format;
  std::string output;
};

int run_codebook_export(const CodebookExportOptions& options) {
  for (int dim : options.dims) {
    if (dim < kCodebookMinDim || dim > kCodebookMaxDim) {
      fail("codebook export: --dim {} is out of range, expected {}..{}", dim, kCodebookMinDim, kCodebookMaxDim);
    }
  }
  for (int bits : options.bits) {
    if (bits < kCodebookMinBits || bits > kCodebookMaxBits) {
      fail("codebook export: --bits {} is out of range, expected {}..{}", bits, kCodebookMinBits, kCodebookMaxBits);
    }
  }
  const auto distribution = parse_codebook_distribution(options.distribution);
  if (!distribution)
    fail("codebook export: --dist {} is unknown, expected beta, gauss or uniform", options.distribution);

  CodebookFormat format = CodebookFormat::json;
  if (!options.format.empty()) {
    const auto parsed = parse_codebook_format(options.format);
    if (!parsed) fail("codebook export: --format {} is unknown, expected json, csv, npy, npz or hpp", options.format);
    format = *parsed;
  } else if (const auto from_path = codebook_format_for_path(options.output)) {
    format = *from_path;
  }

  if (!options.output.empty() && options.output != "-") guard_output("codebook export", "-o", options.output, {});
  std::vector<const Codebook*> codebooks;
  for (int dim : options.dims) {
    for (int bits : options.bits) codebooks.push_back(&lloyd_max_codebook(dim, bits, *distribution));
  }
  const std::string provenance =
      fmt::format("tqlab codebook export --dims {} --bits {} --dist {}", fmt::join(options.dims, ","),
                  fmt::join(options.bits, ","), options.distribution);
  write_codebooks(options.output, format, codebooks, provenance);
  if (!options.output.empty() && options.output != "-") {
    log::info("wrote {} codebook{} ({}) to {}", codebooks.size(), codebooks.size() == 1 ? "" : "s",
              codebook_format_name(format), options.output);
  }
  return kExitOk;
}

}  // namespace

void setup_codebook(CLI::App& app, int& exit_code) {
  auto* group = app.add_subcommand(
      "codebook",
      command_description("Lloyd-Max codebooks of TurboQuant's scalar quantizer", "", "tqlab-codebook-export"));
  group->require_subcommand(1);
  auto options = std::make_shared<CodebookExportOptions>();
  auto* command = group->add_subcommand(
      "export", command_description("Write the Lloyd-Max codebook of a rotated unit vector's coordinate in R^D",
                                    "Centroids, boundaries and D_mse as json, csv, npy, npz or a C++ header.",
                                    "tqlab-codebook-export"));
  decimal(command->add_option("--dim,--dims", options->dims,
                              "Dimension(s) D of the rotated vector, 2..4096 (comma list)"),
          kMinIntOption, kMaxIntOption)
      ->delimiter(',')
      ->required();
  decimal(command->add_option("--bits", options->bits, "Bit width(s) B, 1..8 (comma list)"), kMinIntOption,
          kMaxIntOption)
      ->delimiter(',')
      ->required();
  command->add_option("--dist", options->distribution,
                      "beta: the exact coordinate marginal (the paper's); gauss: N(0, 1/D); uniform: equally "
                      "spaced levels")
      ->capture_default_str();
  command->add_option("--format", options->format,
                      "json, csv, npy, npz or hpp (default: from -o's extension, else json)");
  add_output_option(*command, options->output, "Output file (default: stdout; npy and npz need a file)");
  command->callback([options, &exit_code] { exit_code = run_codebook_export(*options); });
}

}  // namespace tqlab::cli
