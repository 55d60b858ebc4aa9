#include "quant/tq_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "quant/codebook.h"
#include "quant/quantizer_support.h"
#include "quant/tq_group_codec.h"
#include "quant/tq_layout.h"

namespace tqlab {
namespace {

std::string dividing_blocks(int dim) {
  std::string list;
  for (int b = 2; b <= dim; ++b) {
    if (dim % b == 0) list += (list.empty() ? "" : ", ") + std::to_string(b);
  }
  return list;
}

// debias divides by alpha = E<Q(u), u>, which is exact for a Haar-rotated u
// only: with one Hadamard round a one-hot key's debiased <x~, x> is 1.70 at
// d = 128, b = 2, and outlier-heavy synthetic keys are ~1-2% off; two rounds
// bring synthetic and real keys within their noise but one-hot keys stay a
// few % off (docs/ROTATIONS.md). So any rotation but Haar draws a warning,
// once per resolved spec in a process (a sweep calls check_dim per tensor).
void warn_if_debias_is_biased(const TqOptions& options, const std::string& resolved_spec,
                              const std::vector<int>& blocks) {
  if (!options.debias) return;
  std::string rotations;
  for (int block : blocks) {
    const RotationKind kind = tq::rotation_for(options, block);
    if (kind != RotationKind::haar && rotations.find(rotation_kind_name(kind)) == std::string::npos) {
      rotations += std::string(rotations.empty() ? "" : ", ") + "rot=" + std::string(rotation_kind_name(kind));
    }
  }
  if (rotations.empty()) return;
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert(resolved_spec).second) return;
  }
  log::warn("quantizer spec '{}': debias divides by alpha = E<Q(u),u>, exact only under rot=haar; with {} inner "
            "products are biased on structured inputs (one-hot keys at d=128, b=2: <x~,x> = 1.70 with one Hadamard "
            "round, 0.99 with two; outlier-heavy keys: +1-2% with one round). Use rot=haar for unbiased inner "
            "products (docs/ROTATIONS.md)",
            resolved_spec, rotations);
}

// The K channels of largest RMS over the tensor (ties: lower channel), ascending.
std::vector<int> choose_outlier_channels(std::int64_t tokens, int dim, const float* x, int count) {
  std::vector<double> energy(static_cast<std::size_t>(dim), 0.0);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int c = 0; c < dim; ++c)
      energy[static_cast<std::size_t>(c)] += static_cast<double>(x[t * dim + c]) * x[t * dim + c];
  }
  std::vector<int> order(static_cast<std::size_t>(dim));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return energy[static_cast<std::size_t>(a)] > energy[static_cast<std::size_t>(b)];
  });
  order.resize(static_cast<std::size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

std::string TqQuantizer::spec_for_dim(int dim) const {
  TqOptions resolved = options_;
  // The blocks the vector is cut into: one block per group (two with outliers).
  std::vector<int> blocks;
  if (options_.outlier_channels > 0) {
    blocks = {dim - options_.outlier_channels, options_.outlier_channels};
  } else {
    blocks = {options_.block != 0 ? options_.block : dim};
    if (options_.block == dim) resolved.block = 0;
  }
  auto all_blocks = [&](auto&& same) { return std::all_of(blocks.begin(), blocks.end(), same); };
  if (options_.rotation &&
      all_blocks([&](int block) { return *options_.rotation == tq::rotation_for(TqOptions{}, block); })) {
    resolved.rotation.reset();
  }
  if (options_.qjl_projections != 0 && all_blocks([&](int block) { return options_.qjl_projections == block; })) {
    resolved.qjl_projections = 0;
  }
  return resolved.spec();
}

bool TqQuantizer::encodes_tokens_independently() const {
  return options_.center != CenterMode::channel && options_.outlier_channels == 0;
}

void TqQuantizer::check_dim(int dim) const {
  // Everything encode() needs of the shape, checked here (so that sweeps and
  // roundtrip can refuse a spec before any work, with a message about what the
  // user wrote): the head dim, how it splits into groups and blocks, and for
  // each block a codebook and a rotation of that size.
  const std::string spec = options_.spec();
  if (dim < 2) fail("quantizer spec '{}': head dim {} is too small (tq needs at least 2)", spec, dim);
  std::vector<int> blocks;  // the block size of each group
  std::string split;        // how the head dim was cut, for messages
  if (options_.outlier_channels > 0) {
    if (options_.outlier_channels > dim - 2 || options_.outlier_channels < 2) {
      fail("quantizer spec '{}': outliers={}@{} needs 2 <= K <= head dim - 2 = {} (each group holds at least 2 "
           "channels)",
           spec, options_.outlier_channels, options_.outlier_bits, dim - 2);
    }
    blocks = {dim - options_.outlier_channels, options_.outlier_channels};
    split = fmt::format("outliers split head dim {} into groups of {} and {}", dim, blocks[0], blocks[1]);
  } else {
    const int block = options_.block != 0 ? options_.block : dim;
    if (dim % block != 0) {
      fail("quantizer spec '{}': block={} does not divide the head dim {}; blocks that do: {}", spec, block, dim,
           dividing_blocks(dim));
    }
    blocks = {block};
    split = fmt::format("the block is {}", block);
  }
  for (int block : blocks) {
    if (block > kCodebookMaxDim) {
      fail("quantizer spec '{}': {}, beyond the largest block a codebook is built for ({}){}", spec, split,
           kCodebookMaxDim, options_.outlier_channels > 0 ? "" : "; use block= with a divisor of the head dim");
    }
    if (options_.rotation && is_hadamard_kind(*options_.rotation) && !hadamard_supports(block)) {
      if (options_.outlier_channels > 0) {
        fail("quantizer spec '{}': rot={} needs power-of-two groups, but {}; drop rot= to use Haar where needed",
             spec, rotation_kind_name(*options_.rotation), split);
      }
      fail("quantizer spec '{}': rot={} needs a power-of-two block, and the block is {}; use rot=haar or a "
           "block of {}",
           spec, rotation_kind_name(*options_.rotation), block, dividing_blocks(dim));
    }
  }
  if (options_.debias) warn_if_debias_is_biased(options_, spec_for_dim(dim), blocks);
}

EncodedTensor TqQuantizer::encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const {
  check_dim(dim);
  // A NaN or Inf makes its block's norm non-finite, and encode_rows then calls
  // require_finite, which names the first one in x: the same error as a scan
  // here, without a pass over x of its own (a sixth of the time at b=4).
  // Channel means and outlier energies are computed before any norm, so those
  // options scan first.
  if (options_.center == CenterMode::channel || options_.outlier_channels > 0) require_finite(tokens, dim, x, context);
  EncodedTensor encoded;
  encoded.tokens = tokens;
  encoded.dim = dim;

  // center=channel quantizes a centered copy; everything else reads x in place.
  std::vector<float> centered;
  const float* source = x;
  std::vector<std::uint16_t> channel_means;
  if (options_.center == CenterMode::channel) {
    centered.assign(x, x + tokens * dim);
    source = centered.data();
    std::vector<double> sums(static_cast<std::size_t>(dim), 0.0);
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int c = 0; c < dim; ++c)
        sums[static_cast<std::size_t>(c)] += centered[static_cast<std::size_t>(t * dim + c)];
    }
    for (int c = 0; c < dim; ++c) {
      const double mean = sums[static_cast<std::size_t>(c)] / static_cast<double>(std::max<std::int64_t>(tokens, 1));
      channel_means.push_back(float_to_half(static_cast<float>(mean)));
      if (!std::isfinite(half_to_float(channel_means.back()))) {
        fail("center=channel: the {} tensor of layer {}, kv head {} has channel {} with mean {:.6g}, beyond fp16 "
             "(65504), where the channel means are stored; drop center=channel or rescale the data",
             role_name(context.role), context.layer, context.kv_head, c, mean);
      }
    }
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int c = 0; c < dim; ++c)
        centered[static_cast<std::size_t>(t * dim + c)] -= half_to_float(channel_means[static_cast<std::size_t>(c)]);
    }
  }
  std::vector<int> outliers;
  if (options_.outlier_channels > 0) outliers = choose_outlier_channels(tokens, dim, source, options_.outlier_channels);

  const tq::TensorPlan plan = tq::plan_tensor(options_, tokens, dim, outliers);
  encoded.bytes.assign(plan.total_bytes, 0);
  std::uint8_t* bytes = encoded.bytes.data();
  if (!channel_means.empty()) std::memcpy(bytes + plan.channel_means, channel_means.data(), 2 * channel_means.size());
  for (std::size_t i = 0; i < outliers.size(); ++i) {
    const auto channel = static_cast<std::uint16_t>(outliers[i]);
    std::memcpy(bytes + plan.outlier_indices + 2 * i, &channel, 2);
  }

  const tq::EncodeInput input{tokens, dim, x, source};
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    tq::encode_group(options_, plan.groups[g], plan.sections[g], input, context, bytes);
  }
  return encoded;
}

void TqQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  const std::int64_t tokens = encoded.tokens;
  const int dim = encoded.dim;
  if (tokens < 0) fail("tq decode of '{}': negative token count {}", spec(), tokens);
  check_dim(dim);
  const std::uint8_t* bytes = encoded.bytes.data();
  std::vector<int> outliers;
  if (options_.outlier_channels > 0) {
    // The indices sit after the channel means, if any.
    const std::size_t at = options_.center == CenterMode::channel ? 2 * static_cast<std::size_t>(dim) : 0;
    if (encoded.bytes.size() < at + 2 * static_cast<std::size_t>(options_.outlier_channels)) {
      fail("tq decode: {} bytes cannot hold the outlier channel list of '{}'", encoded.bytes.size(), spec());
    }
    for (int i = 0; i < options_.outlier_channels; ++i) {
      std::uint16_t channel;
      std::memcpy(&channel, bytes + at + 2 * static_cast<std::size_t>(i), 2);
      // Decode writes out[token * dim + channel]: an index past the head dim
      // would write past the buffer, a repeated one leave a channel unwritten.
      if (channel >= dim || (!outliers.empty() && channel <= outliers.back())) {
        fail_corrupt(spec(), context,
                     fmt::format("outlier channel #{} is {}, expected {}..{}, strictly ascending", i, channel,
                                 outliers.empty() ? 0 : outliers.back() + 1, dim - 1));
      }
      outliers.push_back(channel);
    }
  }
  const tq::TensorPlan plan = tq::plan_tensor(options_, tokens, dim, outliers);
  if (plan.total_bytes != encoded.bytes.size()) {
    fail("tq decode: '{}' at {} tokens x {} dims needs {} bytes, got {}", spec(), tokens, dim, plan.total_bytes,
         encoded.bytes.size());
  }
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    tq::decode_group(options_, plan.groups[g], plan.sections[g], bytes, tokens, dim, context, out);
  }
  if (options_.center == CenterMode::channel) {
    for (int c = 0; c < dim; ++c) {
      std::uint16_t mean_bits;
      std::memcpy(&mean_bits, bytes + plan.channel_means + 2 * static_cast<std::size_t>(c), 2);
      const float mean = half_to_float(mean_bits);
      if (!std::isfinite(mean)) fail_corrupt(spec(), context, fmt::format("channel {} stores mean {}", c, mean));
      for (std::int64_t t = 0; t < tokens; ++t) out[t * dim + c] += mean;
    }
  }
}

std::vector<MethodInfo> turbo_methods() {
  MethodInfo info;
  info.name = "tq";
  info.summary = "TurboQuant/PolarQuant: norm + random rotation + Lloyd-Max codes per block (+ optional 1-bit QJL)";
  info.options = tq_option_docs();
  info.bits_formula =
      "c + q*(m + n)/B + n/B + (center=block ? 16/B : 0) + (center=channel ? 16/T : 0), with c the code bits "
      "(b, or b-1 with qjl=prod), q = 1 with qjl, m projections (default B), n = 16 (fp16/bf16) or 32 (fp32) "
      "norm bits, T tokens per head; outliers=K@B2: the two groups' terms weighted by their channels, + 16K/(D T)";
  info.example_specs = {"tq:b=4",          "tq:b=3,block=32", "tq:b=2,rot=haar",   "tq:b=3,cb=gauss",
                        "tq:b=3,cb=uniform", "tq:b=3,nc",      "tq:b=2,debias",     "tq:b=3,qjl=prod",
                        "tq:b=1,qjl=prod", "tq:b=2,qjl=extra,qjl_m=64", "tq:b=4,norm=fp32", "tq:b=3,center=block",
                        "tq:b=3,center=channel", "tq:b=2,outliers=8@3", "tq:b=3,rot=none",
                        "tq:b=2,rot=hadamard2"};
  info.make = [](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
    return std::make_unique<TqQuantizer>(TqOptions::parse(reader));
  };
  return {info};
}

}  // namespace tqlab