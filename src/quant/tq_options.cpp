#include "quant/tq_options.h"

#include <charconv>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/error.h"

namespace tqlab {
namespace {

const std::vector<std::string> kKnownOptions = {"b", "block", "rot", "cb", "nc", "debias", "qjl",
                                               "qjl_m", "norm", "center", "outliers"};

// "K@B2" -> (K, B2).
std::pair<int, int> parse_outliers(const std::string& spec, const std::string& value) {
  const std::size_t at = value.find('@');
  int count = 0, bits = 0;
  bool ok = at != std::string::npos;
  if (ok) {
    const char* begin = value.data();
    const auto first = std::from_chars(begin, begin + at, count);
    const auto second = std::from_chars(begin + at + 1, begin + value.size(), bits);
    ok = first.ec == std::errc() && first.ptr == begin + at && second.ec == std::errc() &&
         second.ptr == begin + value.size() && count >= 1 && bits >= 1 && bits <= 8;
  }
  if (!ok) {
    fail("quantizer spec '{}': outliers={} is not allowed, expected K@B (K >= 1 outlier channels quantized "
         "with B = 1..8 bits), e.g. outliers=32@3",
         spec, value);
  }
  return {count, bits};
}

}  // namespace

TqOptions TqOptions::parse(SpecOptionReader& reader) {
  const std::string& spec = reader.spec().text;
  TqOptions options;
  const auto bits = reader.integer("b", 1, 8);
  if (!bits) fail("quantizer spec '{}': missing required option b (bits per value, 1..8), e.g. tq:b=4", spec);
  options.bits = *bits;
  options.block = reader.integer("block", 2, 4096).value_or(0);
  if (const auto rot = reader.choice("rot", {"hadamard", "haar", "none"})) options.rotation = parse_rotation_kind(*rot);
  if (const auto cb = reader.choice("cb", {"beta", "gauss", "uniform"})) {
    options.codebook = *parse_codebook_distribution(*cb);
  }
  options.norm_correction = reader.flag("nc");
  options.debias = reader.flag("debias");
  if (const auto qjl = reader.choice("qjl", {"prod", "extra"})) {
    options.qjl = *qjl == "prod" ? QjlMode::prod : QjlMode::extra;
  }
  options.qjl_projections = reader.integer("qjl_m", 1, 65536).value_or(0);
  if (const auto norm = reader.choice("norm", {"fp16", "bf16", "fp32"})) {
    options.norm = *norm == "fp16" ? NormType::fp16 : *norm == "bf16" ? NormType::bf16 : NormType::fp32;
  }
  if (const auto center = reader.choice("center", {"block", "channel"})) {
    options.center = *center == "block" ? CenterMode::block : CenterMode::channel;
  }
  if (const auto outliers = reader.text("outliers")) {
    std::tie(options.outlier_channels, options.outlier_bits) = parse_outliers(spec, *outliers);
  }
  reader.finish(kKnownOptions);

  if (options.norm_correction && options.debias) {
    fail("quantizer spec '{}': nc and debias both rescale the decoded vector; choose one", spec);
  }
  if (options.debias && options.qjl != QjlMode::none) {
    fail("quantizer spec '{}': debias with qjl means nothing: the QJL estimator is already unbiased", spec);
  }
  if (options.qjl_projections != 0 && options.qjl == QjlMode::none) {
    fail("quantizer spec '{}': qjl_m sets the QJL projections; it needs qjl=prod or qjl=extra", spec);
  }
  if (options.outlier_channels > 0 && options.block != 0) {
    fail("quantizer spec '{}': outliers=K@B splits each vector into two groups, each quantized as one block; "
         "drop block=",
         spec);
  }
  return options;
}

std::string TqOptions::spec() const {
  std::string out = fmt::format("tq:b={}", bits);
  if (block != 0) out += fmt::format(",block={}", block);
  if (rotation) out += fmt::format(",rot={}", rotation_kind_name(*rotation));
  if (codebook != CodebookDistribution::beta) out += fmt::format(",cb={}", codebook_distribution_name(codebook));
  if (norm_correction) out += ",nc";
  if (debias) out += ",debias";
  if (qjl != QjlMode::none) out += qjl == QjlMode::prod ? ",qjl=prod" : ",qjl=extra";
  if (qjl_projections != 0) out += fmt::format(",qjl_m={}", qjl_projections);
  if (norm != NormType::fp16) out += fmt::format(",norm={}", norm_type_name(norm));
  if (center != CenterMode::none) out += center == CenterMode::block ? ",center=block" : ",center=channel";
  if (outlier_channels > 0) out += fmt::format(",outliers={}@{}", outlier_channels, outlier_bits);
  return out;
}

std::string_view norm_type_name(NormType type) {
  switch (type) {
    case NormType::fp16: return "fp16";
    case NormType::bf16: return "bf16";
    case NormType::fp32: return "fp32";
  }
  return "?";
}

DType norm_dtype(NormType type) {
  switch (type) {
    case NormType::fp16: return DType::f16;
    case NormType::bf16: return DType::bf16;
    case NormType::fp32: return DType::f32;
  }
  return DType::f16;
}


}  // namespace tqlab
