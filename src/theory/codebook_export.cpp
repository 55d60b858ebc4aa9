// Lloyd–Max codebooks written as json, csv, npy, npz or a C++ header. See codebook_export.h.
#include "theory/codebook_export.h"

#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/name_table.h"
#include "io/tensor_file.h"
#include "quant/codebook.h"
#include "results/results_document.h"
#include "tqlab_version.h"

namespace tqlab {
namespace {

// fmt's "{}" prints a double in its shortest form that reads back as the same
// double ("0.1160..." with up to 17 digits, "1e-05"): full precision, and a
// valid C++ and CSV literal.
std::string number(double value) { return fmt::format("{}", value); }

// "a, b, c" for a few values; longer lists wrap four to a line so that a 256-level
// header stays readable.
std::string join_numbers(const std::vector<double>& values) {
  constexpr std::size_t kPerLine = 4;
  const bool wrap = values.size() > kPerLine;
  std::string text = wrap ? "\n    " : "";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += i % kPerLine == 0 ? ",\n    " : ", ";
    text += number(values[i]);
  }
  return text + (wrap ? "\n" : "");
}

/// "beta_d128_b2": names npz members and header symbols.
std::string codebook_stem(const Codebook& codebook) {
  return fmt::format("{}_d{}_b{}", codebook_distribution_name(codebook.distribution), codebook.dim, codebook.bits);
}

std::string csv_text(const std::vector<const Codebook*>& codebooks) {
  std::string text = "dim,bits,distribution,index,centroid,upper_boundary,mse_per_coord,d_mse\n";
  for (const Codebook* codebook : codebooks) {
    for (std::size_t i = 0; i < codebook->centroids.size(); ++i) {
      const std::string boundary = i < codebook->boundaries.size() ? number(codebook->boundaries[i]) : "";
      text += fmt::format("{},{},{},{},{},{},{},{}\n", codebook->dim, codebook->bits,
                          codebook_distribution_name(codebook->distribution), i, number(codebook->centroids[i]),
                          boundary, number(codebook->mse_per_coord), number(codebook->d_mse()));
    }
  }
  return text;
}

std::string hpp_text(const std::vector<const Codebook*>& codebooks, std::string_view provenance) {
  std::string text = fmt::format(
      "// Lloyd-Max codebooks for one coordinate of a randomly rotated unit vector in R^dim,\n"
      "// written by tqlab {} ({}){}{}.\n"
      "//   centroids:  2^bits levels, ascending, in the coordinate's own units (scale by the\n"
      "//               vector's norm); the code of t is the number of boundaries <= t.\n"
      "//   boundaries: the 2^bits - 1 thresholds; boundaries[i] lies between centroids[i] and [i + 1].\n"
      "//   mse_per_coord: E[(t - Q(t))^2] under the distribution the codebook was designed for\n"
      "//   (beta: the exact marginal of a rotated unit vector's coordinate; gauss: N(0, 1/dim));\n"
      "//   d_mse = dim * mse_per_coord, the distortion of a whole unit vector.\n"
      "// kAll lists every codebook below: export all a program needs into one header\n"
      "// (--dims/--bits lists). Self-contained C++17; every number reads back as the double\n"
      "// tqlab computed.\n"
      "#pragma once\n\n"
      "namespace tqlab_codebook {{\n\n"
      "#ifndef TQLAB_CODEBOOK_STRUCT_DEFINED\n"
      "#define TQLAB_CODEBOOK_STRUCT_DEFINED\n"
      "struct Codebook {{\n"
      "  int dim;\n"
      "  int bits;\n"
      "  const char* distribution;\n"
      "  int levels;                 // 2^bits\n"
      "  const double* centroids;    // levels values\n"
      "  const double* boundaries;   // levels - 1 values\n"
      "  double mse_per_coord;\n"
      "  double d_mse;\n"
      "}};\n"
      "#endif\n",
      TQLAB_VERSION, TQLAB_GIT_COMMIT, provenance.empty() ? "" : ": ", provenance);
  std::string all;
  for (const Codebook* codebook : codebooks) {
    const std::string stem = codebook_stem(*codebook);
    text += fmt::format(
        "\ninline constexpr double {0}_centroids[{1}] = {{{2}}};\n"
        "inline constexpr double {0}_boundaries[{3}] = {{{4}}};\n"
        "inline constexpr Codebook {0} = {{{5}, {6}, \"{7}\", {1}, {0}_centroids, {0}_boundaries, {8}, {9}}};\n",
        stem, codebook->centroids.size(), join_numbers(codebook->centroids), codebook->boundaries.size(),
        join_numbers(codebook->boundaries), codebook->dim, codebook->bits,
        codebook_distribution_name(codebook->distribution), number(codebook->mse_per_coord),
        number(codebook->d_mse()));
    all += (all.empty() ? "" : ", ") + stem;
  }
  text += fmt::format("\ninline constexpr Codebook kAll[] = {{{}}};\n\n}}  // namespace tqlab_codebook\n", all);
  return text;
}

std::vector<std::byte> f64_bytes(const std::vector<double>& values) {
  // Raw doubles: npy's '<f8' is little-endian IEEE 754, as this machine's doubles are.
  std::vector<std::byte> bytes(values.size() * sizeof(double));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

constexpr auto kCodebookFormatNames =
    make_name_table<CodebookFormat>({{CodebookFormat::json, "json"}, {CodebookFormat::csv, "csv"},
                                     {CodebookFormat::npy, "npy"}, {CodebookFormat::npz, "npz"},
                                     {CodebookFormat::hpp, "hpp"}});

}  // namespace

std::string_view codebook_format_name(CodebookFormat format) { return kCodebookFormatNames.name(format); }

std::optional<CodebookFormat> parse_codebook_format(std::string_view name) { return kCodebookFormatNames.parse(name); }

std::optional<CodebookFormat> codebook_format_for_path(std::string_view path) {
  if (path.ends_with(".h")) return CodebookFormat::hpp;
  const auto dot = path.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  return parse_codebook_format(path.substr(dot + 1));
}

nlohmann::json codebook_json(const Codebook& codebook) {
  return {{"schema", kCodebookSchema},
          {"dim", codebook.dim},
          {"bits", codebook.bits},
          {"distribution", codebook_distribution_name(codebook.distribution)},
          {"levels", codebook.centroids.size()},
          {"centroids", codebook.centroids},
          {"boundaries", codebook.boundaries},
          {"mse_per_coord", codebook.mse_per_coord},
          {"d_mse", codebook.d_mse()},
          {"marginal_mse_per_coord", codebook.marginal_mse_per_coord},
          {"alpha", codebook.alpha},
          {"tqlab_version", TQLAB_VERSION}};
}

std::string codebook_text(CodebookFormat format, const std::vector<const Codebook*>& codebooks,
                          std::string_view provenance) {
  if (codebooks.empty()) fail("codebook export: no codebooks to write");
  switch (format) {
    case CodebookFormat::json: {
      nlohmann::json out;
      if (codebooks.size() == 1) {
        out = codebook_json(*codebooks[0]);
      } else {
        out = {{"schema", kCodebookSchema}, {"codebooks", nlohmann::json::array()}};
        for (const Codebook* codebook : codebooks) out["codebooks"].push_back(codebook_json(*codebook));
      }
      return out.dump(2) + "\n";
    }
    case CodebookFormat::csv: return csv_text(codebooks);
    case CodebookFormat::hpp: return hpp_text(codebooks, provenance);
    case CodebookFormat::npy:
    case CodebookFormat::npz: break;
  }
  fail("codebook export: --format {} is binary and has no text form", codebook_format_name(format));
}

void write_codebooks(const std::string& path, CodebookFormat format, const std::vector<const Codebook*>& codebooks,
                     std::string_view provenance) {
  if (format != CodebookFormat::npy && format != CodebookFormat::npz) {
    write_text_file(path.empty() ? "-" : path, codebook_text(format, codebooks, provenance));
    return;
  }
  const std::string extension = format == CodebookFormat::npy ? ".npy" : ".npz";
  if (path.empty() || path == "-") {
    fail("codebook export: --format {} writes a binary file; give -o FILE{}", codebook_format_name(format), extension);
  }
  if (!std::string_view(path).ends_with(extension)) {
    fail("codebook export: --format {} but the output '{}' does not end in {}", codebook_format_name(format), path,
         extension);
  }
  if (format == CodebookFormat::npy && codebooks.size() != 1) {
    fail("codebook export: '{}': a .npy file holds one codebook's centroids, not {}; use --format npz",
         path, codebooks.size());
  }
  // The tensors' spans point into `storage`, which must outlive the write.
  std::vector<std::vector<std::byte>> storage;
  std::vector<std::string> names;
  std::vector<std::vector<std::int64_t>> shapes;
  for (const Codebook* codebook : codebooks) {
    const std::string stem = codebook_stem(*codebook);
    storage.push_back(f64_bytes(codebook->centroids));
    names.push_back(stem + "_centroids");
    shapes.push_back({static_cast<std::int64_t>(codebook->centroids.size())});
    if (format == CodebookFormat::npz) {
      storage.push_back(f64_bytes(codebook->boundaries));
      names.push_back(stem + "_boundaries");
      shapes.push_back({static_cast<std::int64_t>(codebook->boundaries.size())});
    }
  }
  std::vector<TensorToWrite> tensors;
  for (std::size_t i = 0; i < storage.size(); ++i) {
    tensors.push_back({names[i], DType::f64, shapes[i], std::span<const std::byte>(storage[i])});
  }
  write_tensor_file(path, tensors);
}

}  // namespace tqlab
