// KIVI (Liu et al. 2024); scheme and packed layout in kivi_quantizer.h.
#include "quant/kivi_quantizer.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/bit_pack.h"
#include "core/dtype.h"
#include "core/error.h"
#include "quant/quantizer_support.h"
#include "quant/registry.h"

namespace tqlab {
namespace {

constexpr std::size_t kGroupSideBytes = 2 * sizeof(std::uint16_t);  // fp16 scale + fp16 zero

// Neighbouring fp16 values, by bit pattern (fp16 codes are ordered like
// their magnitudes within each sign).
std::uint16_t next_half_up(std::uint16_t bits) {
  if (bits == 0x8000u) return 0x0001u;  // -0 -> smallest positive subnormal
  return static_cast<std::uint16_t>((bits & 0x8000u) ? bits - 1 : bits + 1);
}
std::uint16_t next_half_down(std::uint16_t bits) {
  if (bits == 0x0000u) return 0x8001u;  // +0 -> smallest negative subnormal
  return static_cast<std::uint16_t>((bits & 0x8000u) ? bits + 1 : bits - 1);
}

// The largest fp16 <= value (-Inf when value < -65504). Compared in double,
// so the result is right even when value is not a float.
std::uint16_t half_at_or_below(double value) {
  const std::uint16_t bits = float_to_half(static_cast<float>(value));
  return half_to_float(bits) > value ? next_half_down(bits) : bits;
}
// The smallest fp16 >= value (+Inf when value > 65504).
std::uint16_t half_at_or_above(double value) {
  const std::uint16_t bits = float_to_half(static_cast<float>(value));
  return half_to_float(bits) < value ? next_half_up(bits) : bits;
}

struct GroupParameters {
  std::uint16_t scale_bits = 0;
  std::uint16_t zero_bits = 0;
  float scale = 0.0f;
  float zero = 0.0f;
};

// Chooses the largest fp16 zero <= lo and the smallest fp16 scale with
// zero + levels*scale >= hi, so the grid spans [lo, hi] (up to the float
// rounding of decode's sum). Returns false when they do not fit in fp16.
bool fit_group(float lo, float hi, int levels, GroupParameters& group) {
  group.zero_bits = half_at_or_below(lo);
  group.zero = half_to_float(group.zero_bits);
  // hi - zero is exact in double whenever the scale can fit fp16 (hi < 2^24).
  group.scale_bits = half_at_or_above((static_cast<double>(hi) - group.zero) / levels);
  group.scale = half_to_float(group.scale_bits);
  // A zero below -65504 is -Inf, which makes the scale +Inf too.
  return std::isfinite(group.scale);
}

// Which group each value belongs to: index = row_base(token) + column_offset[channel].
class GroupLayout {
 public:
  GroupLayout(std::int64_t tokens, int dim, int group, Role role)
      : group_(group), per_channel_(role == Role::key), column_offset_(static_cast<std::size_t>(dim)) {
    groups_per_row_ = per_channel_ ? dim : (dim + group - 1) / group;
    const std::int64_t row_blocks = per_channel_ ? (tokens + group - 1) / group : tokens;
    count_ = row_blocks * groups_per_row_;
    for (int c = 0; c < dim; ++c) column_offset_[static_cast<std::size_t>(c)] = per_channel_ ? c : c / group;
  }

  std::int64_t count() const { return count_; }
  std::int64_t row_base(std::int64_t token) const {
    return (per_channel_ ? token / group_ : token) * groups_per_row_;
  }
  const std::vector<int>& column_offset() const { return column_offset_; }
  std::int64_t first_token(std::int64_t group_index) const {
    const std::int64_t row_block = group_index / groups_per_row_;
    return per_channel_ ? row_block * group_ : row_block;
  }
  int first_channel(std::int64_t group_index) const {
    const int column = static_cast<int>(group_index % groups_per_row_);
    return per_channel_ ? column : column * group_;
  }

 private:
  int group_;
  bool per_channel_;
  int groups_per_row_ = 0;
  std::int64_t count_ = 0;
  std::vector<int> column_offset_;
};

constexpr int kMinBits = 1, kMaxBits = 8;

// KIVI's options: what `tqlab list` prints and what the parser accepts.
const std::vector<OptionDoc>& kivi_option_docs() {
  static const std::vector<OptionDoc> docs = {
      {"b", fmt::format("{}..{}", kMinBits, kMaxBits), "bits per code (required)"},
      {"group", fmt::format("1..{}", KiviQuantizer::kMaxGroup),
       fmt::format("tokens per key group / channels per value group (default {})", KiviQuantizer::kDefaultGroup)},
  };
  return docs;
}

}  // namespace

// Stream bit of token t's first code: codes are row-major, bits_ each.
std::uint64_t KiviQuantizer::code_bit(std::int64_t token, int dim) const {
  return static_cast<std::uint64_t>(token) * static_cast<std::uint64_t>(dim) * static_cast<std::uint64_t>(bits_);
}

KiviQuantizer::KiviQuantizer(int bits, int group) : bits_(bits), group_(group) {
  assert(bits >= 1 && bits <= 8);
  assert(group >= 1 && group <= kMaxGroup);
}

std::string KiviQuantizer::spec() const {
  std::string text = fmt::format("kivi:b={}", bits_);
  if (group_ != kDefaultGroup) text += fmt::format(",group={}", group_);
  return text;
}

EncodedTensor KiviQuantizer::encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const {
  require_finite(tokens, dim, x, context);
  const GroupLayout layout(tokens, dim, group_, context.role);
  const std::vector<int>& column_offset = layout.column_offset();
  const auto group_count = static_cast<std::size_t>(layout.count());

  std::vector<float> lo(group_count, std::numeric_limits<float>::infinity());
  std::vector<float> hi(group_count, -std::numeric_limits<float>::infinity());
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t base = layout.row_base(t);
    const float* row = x + t * dim;
    for (int c = 0; c < dim; ++c) {
      const auto g = static_cast<std::size_t>(base + column_offset[static_cast<std::size_t>(c)]);
      lo[g] = std::min(lo[g], row[c]);
      hi[g] = std::max(hi[g], row[c]);
    }
  }

  const int levels = (1 << bits_) - 1;
  std::vector<GroupParameters> groups(group_count);
  for (std::size_t g = 0; g < group_count; ++g) {
    if (fit_group(lo[g], hi[g], levels, groups[g])) continue;
    const auto index = static_cast<std::int64_t>(g);
    fail("quantizer '{}': in {}, the group starting at token {}, channel {} spans [{}, {}], beyond the fp16 "
         "range (+-65504) of its stored scale and zero",
         spec(), tensor_location(context), layout.first_token(index), layout.first_channel(index), lo[g], hi[g]);
  }

  const std::size_t side_bytes = group_count * kGroupSideBytes;
  EncodedTensor encoded{tokens, dim, {}};
  encoded.bytes.assign(side_bytes + packed_bytes(static_cast<std::size_t>(tokens * dim), bits_), 0);
  std::uint8_t* bytes = encoded.bytes.data();
  for (std::size_t g = 0; g < group_count; ++g) {
    std::memcpy(bytes + g * kGroupSideBytes, &groups[g].scale_bits, 2);
    std::memcpy(bytes + g * kGroupSideBytes + 2, &groups[g].zero_bits, 2);
  }
  std::vector<std::uint8_t> row_codes(static_cast<std::size_t>(dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t base = layout.row_base(t);
    const float* row = x + t * dim;
    for (int c = 0; c < dim; ++c) {
      const auto g = static_cast<std::size_t>(base + column_offset[static_cast<std::size_t>(c)]);
      const GroupParameters& group = groups[g];
      // Divide rather than multiply by 1/scale: the rounding then never
      // adds to the scale/2 bound more than one float ulp.
      const float steps = group.scale > 0.0f ? (row[c] - group.zero) / group.scale : 0.0f;
      // steps >= 0 up to rounding, so floor(steps + 1/2) rounds halves up.
      row_codes[static_cast<std::size_t>(c)] =
          static_cast<std::uint8_t>(std::clamp(static_cast<int>(std::floor(steps + 0.5f)), 0, levels));
    }
    pack_codes(row_codes.size(), row_codes.data(), bits_, bytes + side_bytes, code_bit(t, dim));
  }
  return encoded;
}

void KiviQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  const std::int64_t tokens = encoded.tokens;
  const int dim = encoded.dim;
  const GroupLayout layout(tokens, dim, group_, context.role);
  const std::vector<int>& column_offset = layout.column_offset();
  const auto group_count = static_cast<std::size_t>(layout.count());
  const std::size_t side_bytes = group_count * kGroupSideBytes;
  require_encoded_size(encoded, side_bytes + packed_bytes(static_cast<std::size_t>(tokens * dim), bits_), spec());

  const std::uint8_t* bytes = encoded.bytes.data();
  std::vector<float> scale(group_count);
  std::vector<float> zero(group_count);
  for (std::size_t g = 0; g < group_count; ++g) {
    std::uint16_t scale_bits, zero_bits;
    std::memcpy(&scale_bits, bytes + g * kGroupSideBytes, 2);
    std::memcpy(&zero_bits, bytes + g * kGroupSideBytes + 2, 2);
    scale[g] = half_to_float(scale_bits);
    zero[g] = half_to_float(zero_bits);
    // encode() refuses groups whose scale or zero overflow fp16; finite ones
    // bound every decoded value (65504 + 255 * 65504).
    if (!std::isfinite(scale[g]) || !std::isfinite(zero[g])) {
      const auto index = static_cast<std::int64_t>(g);
      fail_corrupt(spec(), context,
                   fmt::format("the group starting at token {}, channel {} stores scale {} and zero {}",
                               layout.first_token(index), layout.first_channel(index), scale[g], zero[g]));
    }
  }
  std::vector<std::uint8_t> row_codes(static_cast<std::size_t>(dim));
  for (std::int64_t t = 0; t < tokens; ++t) {
    unpack_codes(row_codes.size(), bytes + side_bytes, code_bit(t, dim), bits_, row_codes.data());
    const std::int64_t base = layout.row_base(t);
    float* row = out + t * dim;
    for (int c = 0; c < dim; ++c) {
      const auto g = static_cast<std::size_t>(base + column_offset[static_cast<std::size_t>(c)]);
      row[c] = zero[g] + static_cast<float>(row_codes[static_cast<std::size_t>(c)]) * scale[g];
    }
  }
}

std::vector<MethodInfo> kivi_methods() {
  MethodInfo kivi;
  kivi.name = "kivi";
  kivi.summary = "KIVI: asymmetric min/max, keys per channel over token groups, values per token over channel groups";
  kivi.options = kivi_option_docs();
  kivi.bits_formula = "b + 32/group (fp16 scale and zero per group; more with a partial last group)";
  kivi.example_specs = {"kivi:b=2", "kivi:b=3,group=16", "kivi:b=4", "kivi:b=8,group=128", "kivi:b=1,group=7"};
  kivi.make = [](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
    const std::optional<int> bits = reader.integer("b", kMinBits, kMaxBits);
    const std::optional<int> group = reader.integer("group", 1, KiviQuantizer::kMaxGroup);
    reader.finish(kivi_option_docs());
    if (!bits) {
      fail("quantizer spec '{}': missing required option b ({}..{})", reader.spec().text, kMinBits, kMaxBits);
    }
    return std::make_unique<KiviQuantizer>(*bits, group.value_or(KiviQuantizer::kDefaultGroup));
  };
  return {std::move(kivi)};
}

}  // namespace tqlab
