// Codebook export (src/theory/codebook_export.h): every format carries the
// codebook's own doubles, bit for bit, in the documented shape.
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/tensor_file.h"
#include "io_test_util.h"
#include "quant/codebook.h"
#include "theory/codebook_export.h"

namespace tqlab {
namespace {

using io_test::ScratchDir;
using io_test::throws_input_error;

const Codebook& beta(int dim, int bits) { return lloyd_max_codebook(dim, bits, CodebookDistribution::beta); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream stream(line);
  while (std::getline(stream, field, separator)) fields.push_back(field);
  if (!line.empty() && line.back() == separator) fields.push_back("");
  return fields;
}

TEST(CodebookExportTest, FormatNamesAndExtensions) {
  for (CodebookFormat format : {CodebookFormat::json, CodebookFormat::csv, CodebookFormat::npy, CodebookFormat::npz,
                                CodebookFormat::hpp}) {
    EXPECT_EQ(parse_codebook_format(codebook_format_name(format)), format);
  }
  EXPECT_FALSE(parse_codebook_format("yaml").has_value());
  EXPECT_EQ(codebook_format_for_path("out/cb.csv"), CodebookFormat::csv);
  EXPECT_EQ(codebook_format_for_path("cb.h"), CodebookFormat::hpp);
  EXPECT_EQ(codebook_format_for_path("cb.hpp"), CodebookFormat::hpp);
  EXPECT_EQ(codebook_format_for_path("cb.npz"), CodebookFormat::npz);
  EXPECT_FALSE(codebook_format_for_path("cb").has_value());
  EXPECT_FALSE(codebook_format_for_path("").has_value());
  EXPECT_FALSE(codebook_format_for_path("cb.txt").has_value());
}

TEST(CodebookExportTest, JsonHoldsTheCodebooksDoublesExactly) {
  const Codebook& codebook = beta(128, 2);
  const nlohmann::json json = nlohmann::json::parse(codebook_text(CodebookFormat::json, {&codebook}));
  EXPECT_EQ(json["schema"], "tqlab.codebook/1");
  EXPECT_EQ(json["dim"], 128);
  EXPECT_EQ(json["bits"], 2);
  EXPECT_EQ(json["distribution"], "beta");
  EXPECT_EQ(json["levels"], 4);
  EXPECT_EQ(json["centroids"].get<std::vector<double>>(), codebook.centroids);
  EXPECT_EQ(json["boundaries"].get<std::vector<double>>(), codebook.boundaries);
  EXPECT_EQ(json["mse_per_coord"].get<double>(), codebook.mse_per_coord);
  EXPECT_EQ(json["d_mse"].get<double>(), 128 * codebook.mse_per_coord);
  EXPECT_NEAR(json["d_mse"].get<double>(), 0.1160, 5e-5);  // the numpy reproduction
  EXPECT_EQ(json["alpha"].get<double>(), codebook.alpha);
}

TEST(CodebookExportTest, SeveralCodebooksAreAListOfCompleteDocuments) {
  const std::vector<const Codebook*> codebooks = {&beta(64, 1), &beta(64, 3), &beta(256, 1)};
  const nlohmann::json json = nlohmann::json::parse(codebook_text(CodebookFormat::json, codebooks));
  EXPECT_EQ(json["schema"], "tqlab.codebook/1");
  ASSERT_EQ(json["codebooks"].size(), 3u);
  for (std::size_t i = 0; i < codebooks.size(); ++i) {
    EXPECT_EQ(json["codebooks"][i]["schema"], "tqlab.codebook/1");
    EXPECT_EQ(json["codebooks"][i]["dim"], codebooks[i]->dim);
    EXPECT_EQ(json["codebooks"][i]["centroids"].get<std::vector<double>>(), codebooks[i]->centroids);
  }
}

TEST(CodebookExportTest, CsvHasOneRowPerLevelWithRoundTripNumbers) {
  const std::vector<const Codebook*> codebooks = {&beta(64, 2), &beta(128, 3)};
  const auto lines = lines_of(codebook_text(CodebookFormat::csv, codebooks));
  ASSERT_EQ(lines.size(), 1u + 4 + 8);
  EXPECT_EQ(lines[0], "dim,bits,distribution,index,centroid,upper_boundary,mse_per_coord,d_mse");
  std::size_t line = 1;
  for (const Codebook* codebook : codebooks) {
    for (std::size_t i = 0; i < codebook->centroids.size(); ++i, ++line) {
      const auto fields = split(lines[line], ',');
      ASSERT_EQ(fields.size(), 8u) << lines[line];
      EXPECT_EQ(std::stoi(fields[0]), codebook->dim);
      EXPECT_EQ(std::stoi(fields[1]), codebook->bits);
      EXPECT_EQ(fields[2], "beta");
      EXPECT_EQ(std::stoul(fields[3]), i);
      EXPECT_EQ(std::stod(fields[4]), codebook->centroids[i]);
      if (i + 1 < codebook->centroids.size()) {
        EXPECT_EQ(std::stod(fields[5]), codebook->boundaries[i]);
      } else {
        EXPECT_EQ(fields[5], "");
      }
      EXPECT_EQ(std::stod(fields[6]), codebook->mse_per_coord);
      EXPECT_EQ(std::stod(fields[7]), codebook->d_mse());
    }
  }
}

TEST(CodebookExportTest, HeaderDeclaresEveryArrayWithExactLiterals) {
  const Codebook& codebook = lloyd_max_codebook(64, 3, CodebookDistribution::gauss);
  const std::string text = codebook_text(CodebookFormat::hpp, {&codebook}, "test provenance");
  EXPECT_NE(text.find("#pragma once"), std::string::npos);
  EXPECT_NE(text.find("test provenance"), std::string::npos);
  EXPECT_NE(text.find("inline constexpr double gauss_d64_b3_centroids[8] = {"), std::string::npos);
  EXPECT_NE(text.find("inline constexpr double gauss_d64_b3_boundaries[7] = {"), std::string::npos);
  EXPECT_NE(text.find("inline constexpr Codebook gauss_d64_b3 = {64, 3, \"gauss\", 8,"), std::string::npos);
  EXPECT_NE(text.find("kAll[] = {gauss_d64_b3}"), std::string::npos);
  // The centroid literals, in order, read back as the codebook's doubles.
  const auto start = text.find('{', text.find("gauss_d64_b3_centroids[8]"));
  const auto end = text.find('}', start);
  std::string body = text.substr(start + 1, end - start - 1);
  std::vector<double> values;
  for (const std::string& field : split(body, ',')) values.push_back(std::stod(field));
  EXPECT_EQ(values, codebook.centroids);
}

TEST(CodebookExportTest, NpyAndNpzReadBackBitExact) {
  ScratchDir scratch;
  const std::string npy = scratch.file("cb.npy");
  write_codebooks(npy, CodebookFormat::npy, {&beta(128, 4)});
  auto file = TensorFile::open(npy);
  ASSERT_EQ(file->tensors().size(), 1u);
  const TensorView& centroids = file->tensors()[0];
  EXPECT_EQ(centroids.dtype, DType::f64);
  EXPECT_EQ(centroids.shape, (std::vector<std::int64_t>{16}));
  std::vector<double> values(16);
  std::memcpy(values.data(), centroids.data, 16 * sizeof(double));
  EXPECT_EQ(values, beta(128, 4).centroids);

  const std::string npz = scratch.file("cb.npz");
  write_codebooks(npz, CodebookFormat::npz, {&beta(64, 1), &beta(64, 2)});
  file = TensorFile::open(npz);
  const TensorView& boundaries = file->get("beta_d64_b2_boundaries");
  EXPECT_EQ(boundaries.shape, (std::vector<std::int64_t>{3}));
  std::vector<float> read(3);
  read_all_floats(boundaries, read.data());
  EXPECT_EQ(read[2], static_cast<float>(beta(64, 2).boundaries[2]));
  EXPECT_NE(file->find("beta_d64_b1_centroids"), nullptr);
  EXPECT_EQ(file->tensors().size(), 4u);
}

TEST(CodebookExportTest, RefusesWhatAFormatCannotHold) {
  ScratchDir scratch;
  const std::vector<const Codebook*> two = {&beta(64, 1), &beta(64, 2)};
  EXPECT_TRUE(throws_input_error([&] { write_codebooks(scratch.file("cb.npy"), CodebookFormat::npy, two); },
                                 {"cb.npy", "--format npz"}));
  EXPECT_TRUE(throws_input_error([&] { write_codebooks("", CodebookFormat::npy, {&beta(64, 1)}); }, {"-o"}));
  EXPECT_TRUE(throws_input_error([&] { write_codebooks("-", CodebookFormat::npz, two); }, {"-o"}));
  EXPECT_TRUE(throws_input_error(
      [&] { write_codebooks(scratch.file("cb.bin"), CodebookFormat::npy, {&beta(64, 1)}); }, {"cb.bin", ".npy"}));
  EXPECT_TRUE(throws_input_error([&] { codebook_text(CodebookFormat::npz, two); }, {"binary"}));
  EXPECT_TRUE(throws_input_error([&] { codebook_text(CodebookFormat::json, {}); }, {"no codebooks"}));
  EXPECT_FALSE(std::filesystem::exists(scratch.file("cb.npy")));
}

TEST(CodebookExportTest, TextFormatsGoToTheFileWhole) {
  ScratchDir scratch;
  const std::string path = scratch.file("cb.csv");
  write_codebooks(path, CodebookFormat::csv, {&beta(32, 2)});
  const auto bytes = io_test::read_bytes(path);
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_EQ(text, codebook_text(CodebookFormat::csv, {&beta(32, 2)}));
}

}  // namespace
}  // namespace tqlab
