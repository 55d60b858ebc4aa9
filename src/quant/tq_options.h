// The options of the `tq` quantizer family (TurboQuant / PolarQuant), parsed
// from a spec string such as "tq:b=3,block=32,nc" (docs/REFERENCE.md#tq-options).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/name_table.h"
#include "quant/codebook.h"
#include "quant/rotation.h"
#include "quant/spec.h"

namespace tqlab {

enum class QjlMode { none, prod, extra };
enum class NormType { fp16, bf16, fp32 };
enum class CenterMode { none, block, channel };

/// Each option's values and their names (the words of qjl=, norm=, center=).
inline constexpr auto kQjlModeNames =
    make_name_table<QjlMode>({{QjlMode::none, "none"}, {QjlMode::prod, "prod"}, {QjlMode::extra, "extra"}});
inline constexpr auto kNormTypeNames =
    make_name_table<NormType>({{NormType::fp16, "fp16"}, {NormType::bf16, "bf16"}, {NormType::fp32, "fp32"}});
inline constexpr auto kCenterModeNames = make_name_table<CenterMode>(
    {{CenterMode::none, "none"}, {CenterMode::block, "block"}, {CenterMode::channel, "channel"}});

/// The values qjl= and center= name (none is the option's absence).
inline constexpr QjlMode kQjlChoices[] = {QjlMode::prod, QjlMode::extra};
inline constexpr CenterMode kCenterChoices[] = {CenterMode::block, CenterMode::channel};

struct TqOptions {
  int bits = 0;                          ///< b = 1..8, bits per value of the codes (+1 QJL bit with qjl=extra)
  int block = 0;                         ///< block size B; 0: the head dim
  std::optional<RotationKind> rotation;  ///< nullopt: hadamard when B is a power of two, else haar
  CodebookDistribution codebook = CodebookDistribution::beta;
  bool norm_correction = false;          ///< nc: rescale the decoded direction to unit length
  bool debias = false;                   ///< divide the decoded direction by alpha = E<Q(u), u>
  QjlMode qjl = QjlMode::none;           ///< prod: b-1 MSE bits + 1 QJL bit; extra: b MSE bits + 1 QJL bit
  int qjl_projections = 0;               ///< m; 0: the block size
  NormType norm = NormType::fp16;        ///< stored type of block norms and residual norms
  CenterMode center = CenterMode::none;
  int outlier_channels = 0;              ///< K of outliers=K@B2 (0: none)
  int outlier_bits = 0;                  ///< B2 of outliers=K@B2

  /// Reads and validates every tq option; refuses combinations that mean nothing.
  static TqOptions parse(SpecOptionReader& reader);

  /// Canonical spec: "tq:b=3" then non-default options in a fixed order.
  std::string spec() const;

};

/// The words of the spec options: "prod", "extra" ("none" for none); "fp16", ...; "block", "channel".
std::string_view qjl_mode_name(QjlMode mode);
std::string_view norm_type_name(NormType type);
std::string_view center_mode_name(CenterMode mode);

/// Every tq option, as `tqlab list` documents it and parse() accepts it.
const std::vector<OptionDoc>& tq_option_docs();
/// The element type a norm is stored in.
DType norm_dtype(NormType type);

}  // namespace tqlab
