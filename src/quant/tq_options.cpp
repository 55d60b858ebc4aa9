#include "quant/tq_options.h"

#include <charconv>
#include <climits>

#include <fmt/format.h>

#include "core/decimal.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/text.h"

namespace tqlab {
namespace {

constexpr int kMinBits = 1, kMaxBits = 8;
constexpr int kMinBlock = 2, kMaxBlock = 4096;
constexpr int kMaxQjlProjections = 65536;

// "K@B2" -> (K, B2).
std::pair<int, int> parse_outliers(const std::string& spec, const std::string& value) {
  const std::size_t at = value.find('@');
  std::optional<std::int64_t> count, bits;
  if (at != std::string::npos) {
    count = decimal_integer(std::string_view(value).substr(0, at), 1, INT_MAX);
    bits = decimal_integer(std::string_view(value).substr(at + 1), 1, 8);
  }
  if (!count || !bits) {
    fail("quantizer spec '{}': outliers={} is not allowed, expected K@B (K >= 1 outlier channels quantized "
         "with B = 1..8 bits), e.g. outliers=32@3",
         spec, printable(value));
  }
  return {static_cast<int>(*count), static_cast<int>(*bits)};
}

}  // namespace

TqOptions TqOptions::parse(SpecOptionReader& reader) {
  const std::string& spec = reader.spec().text;
  TqOptions options;
  const auto bits = reader.integer("b", kMinBits, kMaxBits);
  if (!bits) fail("quantizer spec '{}': missing required option b (bits per value, 1..8), e.g. tq:b=4", spec);
  options.bits = *bits;
  options.block = reader.integer("block", kMinBlock, kMaxBlock).value_or(0);
  options.rotation = reader.choice("rot", kRotationKindNames);
  options.codebook = reader.choice("cb", kCodebookDistributionNames).value_or(options.codebook);
  options.norm_correction = reader.flag("nc");
  options.debias = reader.flag("debias");
  options.qjl = reader.choice("qjl", kQjlChoices, qjl_mode_name).value_or(QjlMode::none);
  options.qjl_projections = reader.integer("qjl_m", 1, kMaxQjlProjections).value_or(0);
  options.norm = reader.choice("norm", kNormTypeNames).value_or(NormType::fp16);
  options.center = reader.choice("center", kCenterChoices, center_mode_name).value_or(CenterMode::none);
  if (const auto outliers = reader.text("outliers")) {
    std::tie(options.outlier_channels, options.outlier_bits) = parse_outliers(spec, *outliers);
  }
  reader.finish(tq_option_docs());

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
  if (qjl != QjlMode::none) out += fmt::format(",qjl={}", qjl_mode_name(qjl));
  if (qjl_projections != 0) out += fmt::format(",qjl_m={}", qjl_projections);
  if (norm != NormType::fp16) out += fmt::format(",norm={}", norm_type_name(norm));
  if (center != CenterMode::none) out += fmt::format(",center={}", center_mode_name(center));
  if (outlier_channels > 0) out += fmt::format(",outliers={}@{}", outlier_channels, outlier_bits);
  return out;
}

std::string_view qjl_mode_name(QjlMode mode) { return kQjlModeNames.name(mode); }

std::string_view center_mode_name(CenterMode mode) { return kCenterModeNames.name(mode); }

std::string_view norm_type_name(NormType type) { return kNormTypeNames.name(type); }

const std::vector<OptionDoc>& tq_option_docs() {
  static const std::vector<OptionDoc> docs = {
      {"b", fmt::format("{}..{}", kMinBits, kMaxBits), "bits per value of the codes (required)"},
      {"block", fmt::format("{}..{}", kMinBlock, kMaxBlock),
       "block size B sharing one norm and rotation (default: the head dim)"},
      {"rot", choice_list(kRotationKindNames.names()),
       "rotation (default: hadamard when B is a power of two, else haar; hadamard2: two rounds, closer to "
       "Haar on structured inputs at twice hadamard's cost, docs/ROTATIONS.md)"},
      {"cb", choice_list(kCodebookDistributionNames.names()),
       "codebook: exact Beta marginal, its Gaussian limit, or uniform levels (default beta)"},
      {"nc", "", "norm correction: rescale the decoded direction to unit length"},
      {"debias", "",
       "divide the decoded direction by alpha = E<Q(u),u>: unbiased inner products under rot=haar only "
       "(other rotations are biased on structured inputs and warn; docs/ROTATIONS.md)"},
      {"qjl", choice_list(choice_words(kQjlChoices, qjl_mode_name)),
       "1-bit QJL residual sketch: prod spends 1 of the b bits, extra adds it"},
      {"qjl_m", fmt::format("1..{}", kMaxQjlProjections), "QJL projections per block (default B)"},
      {"norm", choice_list(kNormTypeNames.names()), "stored type of norms (default fp16)"},
      {"center", choice_list(choice_words(kCenterChoices, center_mode_name)),
       "subtract each block's mean (fp16 per block) or each channel's mean (fp16 per head)"},
      {"outliers", "K@B2", "the K channels of largest RMS per head form a second group quantized with B2 bits"},
  };
  return docs;
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
