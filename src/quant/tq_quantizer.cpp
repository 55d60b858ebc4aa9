#include "quant/tq_quantizer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "core/bit_pack.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "quant/qjl.h"
#include "quant/tq_kernels.h"

namespace tqlab {
namespace {

// Streams of derive_seed: each random object of a block has its own.
enum SeedStream : std::uint64_t { kRotationStream = 1, kQjlStream = 2 };

// Tokens processed together: a chunk of T x B floats stays in L2.
constexpr std::int64_t kChunkTokens = 256;

bool is_power_of_two(int n) { return n > 0 && std::has_single_bit(static_cast<unsigned>(n)); }

// One group of channels quantized alike: all channels, or the regular /
// outlier channels of outliers=K@B2.
struct GroupPlan {
  int index = 0;               // 0: regular channels, 1: outlier channels (enters the seeds)
  std::vector<int> channels;   // the group's channels in the head vector (size G)
  int block = 0;               // B
  int blocks = 0;              // G / B
  int mse_bits = 0;            // bits of a scalar code (0: pure QJL)
  RotationKind rotation = RotationKind::hadamard;
  int projections = 0;         // QJL m (0: no QJL)

  int size() const { return static_cast<int>(channels.size()); }
};

// Byte offsets of one group's sections.
struct GroupSections {
  std::size_t codes = 0, signs = 0, norms = 0, residual_norms = 0, means = 0, end = 0;
};

struct TensorPlan {
  std::int64_t tokens = 0;
  int dim = 0;
  std::vector<GroupPlan> groups;
  std::size_t channel_means = 0, outlier_indices = 0;  // section offsets
  std::vector<GroupSections> sections;
  std::size_t total_bytes = 0;
};

RotationKind rotation_for(const TqOptions& options, int block) {
  if (options.rotation) return *options.rotation;
  return is_power_of_two(block) ? RotationKind::hadamard : RotationKind::haar;
}

std::string dividing_blocks(int dim) {
  std::string list;
  for (int b = 2; b <= dim; ++b) {
    if (dim % b == 0) list += (list.empty() ? "" : ", ") + std::to_string(b);
  }
  return list;
}

// Groups and section offsets for a tensor; `outliers` lists the outlier channels (ascending).
TensorPlan make_plan(const TqOptions& options, std::int64_t tokens, int dim, const std::vector<int>& outliers) {
  TensorPlan plan;
  plan.tokens = tokens;
  plan.dim = dim;
  std::vector<int> regular;
  for (int c = 0, next = 0; c < dim; ++c) {
    if (next < static_cast<int>(outliers.size()) && outliers[static_cast<std::size_t>(next)] == c) {
      ++next;
    } else {
      regular.push_back(c);
    }
  }
  auto add_group = [&](int index, std::vector<int> channels, int bits) {
    GroupPlan group;
    group.index = index;
    group.channels = std::move(channels);
    group.block = options.block != 0 ? options.block : group.size();
    group.blocks = group.size() / group.block;
    group.mse_bits = options.qjl == QjlMode::prod ? bits - 1 : bits;
    group.rotation = rotation_for(options, group.block);
    if (options.qjl != QjlMode::none) group.projections = options.qjl_projections != 0 ? options.qjl_projections : group.block;
    plan.groups.push_back(std::move(group));
  };
  add_group(0, std::move(regular), options.bits);
  if (!outliers.empty()) add_group(1, outliers, options.outlier_bits);

  std::size_t offset = 0;
  if (options.center == CenterMode::channel) {
    plan.channel_means = offset;
    offset += 2 * static_cast<std::size_t>(dim);
  }
  if (options.outlier_channels > 0) {
    plan.outlier_indices = offset;
    offset += 2 * outliers.size();
  }
  const std::size_t norm_bytes = static_cast<std::size_t>(norm_type_bytes(options.norm));
  for (const GroupPlan& group : plan.groups) {
    const std::size_t n = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(group.blocks);
    GroupSections sections;
    sections.codes = offset;
    offset += packed_bytes(n * static_cast<std::size_t>(group.block), std::max(group.mse_bits, 1)) * (group.mse_bits > 0);
    sections.signs = offset;
    offset += packed_bytes(n * static_cast<std::size_t>(group.projections), 1);
    sections.norms = offset;
    offset += n * norm_bytes;
    sections.residual_norms = offset;
    if (group.projections > 0) offset += n * norm_bytes;
    sections.means = offset;
    if (options.center == CenterMode::block) offset += 2 * n;
    sections.end = offset;
    plan.sections.push_back(sections);
  }
  plan.total_bytes = offset;
  return plan;
}

void store_norm(float value, NormType type, std::uint8_t* at) {
  if (type == NormType::fp32) {
    std::memcpy(at, &value, 4);
    return;
  }
  const std::uint16_t bits = type == NormType::fp16 ? float_to_half(value) : float_to_bf16(value);
  std::memcpy(at, &bits, 2);
}

float load_norm(const std::uint8_t* at, NormType type) {
  if (type == NormType::fp32) {
    float value;
    std::memcpy(&value, at, 4);
    return value;
  }
  std::uint16_t bits;
  std::memcpy(&bits, at, 2);
  return type == NormType::fp16 ? half_to_float(bits) : bf16_to_float(bits);
}

// The random objects and codebook of one group, for one (role, layer, head).
class GroupCodec {
 public:
  GroupCodec(const TqOptions& options, const GroupPlan& group, const QuantContext& context)
      : options_(options), group_(group) {
    for (int block = 0; block < group.blocks; ++block) {
      const auto seed_of = [&](SeedStream stream) {
        return derive_seed({context.seed, static_cast<std::uint64_t>(context.role),
                            static_cast<std::uint64_t>(context.layer), static_cast<std::uint64_t>(context.kv_head),
                            static_cast<std::uint64_t>(group.index), static_cast<std::uint64_t>(block), stream});
      };
      rotations_.push_back(Rotation::make(group.rotation, group.block, seed_of(kRotationStream)));
      if (group.projections > 0) {
        sketches_.push_back(std::make_unique<QjlSketch>(group.block, group.projections, seed_of(kQjlStream)));
      }
    }
    if (group.mse_bits > 0) {
      codebook_ = &lloyd_max_codebook(group.block, group.mse_bits, options.codebook);
      alpha_ = codebook_->alpha;
    }
  }

  // Quantizes rows [first, first + n) of one block. rows: n * B floats (modified: rotated directions).
  void encode_block(std::int64_t first, std::int64_t n, int block, float* rows, const TensorPlan& plan,
                    const GroupSections& sections, std::uint8_t* bytes, const QuantContext& context) const {
    const int B = group_.block;
    const std::size_t norm_bytes = static_cast<std::size_t>(norm_type_bytes(options_.norm));
    scratch_codes_.resize(static_cast<std::size_t>(B));
    scratch_signs_.resize(static_cast<std::size_t>(std::max(group_.projections, 1)));
    scratch_residual_.resize(static_cast<std::size_t>(B));
    for (std::int64_t row = 0; row < n; ++row) {
      float* x = rows + row * B;
      const std::size_t slot = static_cast<std::size_t>((first + row) * group_.blocks + block);
      if (options_.center == CenterMode::block) {
        double sum = 0;
        for (int i = 0; i < B; ++i) sum += x[i];
        const std::uint16_t mean_bits = float_to_half(static_cast<float>(sum / B));
        const float mean = half_to_float(mean_bits);
        for (int i = 0; i < B; ++i) x[i] -= mean;
        std::memcpy(bytes + sections.means + 2 * slot, &mean_bits, 2);
      }
      const float norm = vector_norm(B, x);
      const float stored = round_to_norm_type(norm, options_.norm);
      if (!std::isfinite(stored)) {
        fail("the {} tensor of layer {}, kv head {}: token {} has norm {:.6g}, beyond {}; use norm=fp32",
             role_name(context.role), context.layer, context.kv_head, first + row, norm, norm_type_name(options_.norm));
      }
      store_norm(stored, options_.norm, bytes + sections.norms + norm_bytes * slot);
      const float inverse = norm > 0 ? 1.0f / norm : 0.0f;
      for (int i = 0; i < B; ++i) x[i] *= inverse;
    }
    (void)plan;
    rotations_[static_cast<std::size_t>(block)]->forward(n, rows, rows);
    for (std::int64_t row = 0; row < n; ++row) {
      const float* y = rows + row * B;
      const std::uint64_t slot = static_cast<std::uint64_t>((first + row) * group_.blocks + block);
      if (group_.mse_bits > 0) {
        quantize_to_codes(B, y, *codebook_, scratch_codes_.data());
        pack_codes(static_cast<std::size_t>(B), scratch_codes_.data(), group_.mse_bits, bytes + sections.codes,
                   slot * static_cast<std::uint64_t>(B) * static_cast<std::uint64_t>(group_.mse_bits));
      }
      if (group_.projections > 0) {
        for (int i = 0; i < B; ++i) {
          const float centroid = group_.mse_bits > 0 ? codebook_->centroids_f[scratch_codes_[static_cast<std::size_t>(i)]] : 0.0f;
          scratch_residual_[static_cast<std::size_t>(i)] = y[i] - centroid;
        }
        const float residual_norm = round_to_norm_type(vector_norm(B, scratch_residual_.data()), options_.norm);
        store_norm(residual_norm, options_.norm, bytes + sections.residual_norms + norm_bytes * slot);
        sketches_[static_cast<std::size_t>(block)]->sketch(scratch_residual_.data(), scratch_signs_.data());
        pack_codes(static_cast<std::size_t>(group_.projections), scratch_signs_.data(), 1, bytes + sections.signs,
                   slot * static_cast<std::uint64_t>(group_.projections));
      }
    }
  }

  // Decodes rows [first, first + n) of one block into rows: n * B floats.
  void decode_block(std::int64_t first, std::int64_t n, int block, const GroupSections& sections,
                    const std::uint8_t* bytes, float* rows) const {
    const int B = group_.block;
    const std::size_t norm_bytes = static_cast<std::size_t>(norm_type_bytes(options_.norm));
    scratch_codes_.resize(static_cast<std::size_t>(B));
    scratch_signs_.resize(static_cast<std::size_t>(std::max(group_.projections, 1)));
    for (std::int64_t row = 0; row < n; ++row) {
      float* y = rows + row * B;
      const std::uint64_t slot = static_cast<std::uint64_t>((first + row) * group_.blocks + block);
      if (group_.mse_bits > 0) {
        unpack_codes(static_cast<std::size_t>(B), bytes + sections.codes,
                     slot * static_cast<std::uint64_t>(B) * static_cast<std::uint64_t>(group_.mse_bits), group_.mse_bits,
                     scratch_codes_.data());
        for (int i = 0; i < B; ++i) y[i] = codebook_->centroids_f[scratch_codes_[static_cast<std::size_t>(i)]];
      } else {
        std::fill(y, y + B, 0.0f);
      }
      if (group_.projections > 0) {
        unpack_codes(static_cast<std::size_t>(group_.projections), bytes + sections.signs,
                     slot * static_cast<std::uint64_t>(group_.projections), 1, scratch_signs_.data());
        const float residual_norm = load_norm(bytes + sections.residual_norms + norm_bytes * slot, options_.norm);
        sketches_[static_cast<std::size_t>(block)]->add_estimate(scratch_signs_.data(), residual_norm, y);
      }
      float scale = 1.0f;
      if (options_.norm_correction) {
        const float length = vector_norm(B, y);
        scale = length > 0 ? 1.0f / length : 0.0f;
      } else if (options_.debias) {
        scale = static_cast<float>(1.0 / alpha_);
      }
      if (scale != 1.0f) {
        for (int i = 0; i < B; ++i) y[i] *= scale;
      }
    }
    rotations_[static_cast<std::size_t>(block)]->inverse(n, rows, rows);
    for (std::int64_t row = 0; row < n; ++row) {
      float* x = rows + row * B;
      const std::size_t slot = static_cast<std::size_t>((first + row) * group_.blocks + block);
      const float norm = load_norm(bytes + sections.norms + norm_bytes * slot, options_.norm);
      for (int i = 0; i < B; ++i) x[i] *= norm;
      if (options_.center == CenterMode::block) {
        std::uint16_t mean_bits;
        std::memcpy(&mean_bits, bytes + sections.means + 2 * slot, 2);
        const float mean = half_to_float(mean_bits);
        for (int i = 0; i < B; ++i) x[i] += mean;
      }
    }
  }

 private:
  const TqOptions& options_;
  const GroupPlan& group_;
  std::vector<std::unique_ptr<Rotation>> rotations_;
  std::vector<std::unique_ptr<QjlSketch>> sketches_;
  const Codebook* codebook_ = nullptr;
  double alpha_ = 1.0;
  mutable std::vector<std::uint8_t> scratch_codes_, scratch_signs_;
  mutable std::vector<float> scratch_residual_;
};

// Copies block `block` of a group's channels for rows [first, first + n) of x (tokens x dim) into rows (n x B).
void gather_block(const TensorPlan& plan, const GroupPlan& group, int block, std::int64_t first, std::int64_t n,
                  const float* x, float* rows) {
  const int B = group.block;
  const int* channels = group.channels.data() + static_cast<std::ptrdiff_t>(block) * B;
  const bool contiguous = channels[B - 1] - channels[0] == B - 1;
  for (std::int64_t row = 0; row < n; ++row) {
    const float* source = x + (first + row) * plan.dim;
    float* target = rows + row * B;
    if (contiguous) {
      std::memcpy(target, source + channels[0], sizeof(float) * static_cast<std::size_t>(B));
    } else {
      for (int i = 0; i < B; ++i) target[i] = source[channels[i]];
    }
  }
}

void scatter_block(const TensorPlan& plan, const GroupPlan& group, int block, std::int64_t first, std::int64_t n,
                   const float* rows, float* x) {
  const int B = group.block;
  const int* channels = group.channels.data() + static_cast<std::ptrdiff_t>(block) * B;
  for (std::int64_t row = 0; row < n; ++row) {
    float* target = x + (first + row) * plan.dim;
    const float* source = rows + row * B;
    for (int i = 0; i < B; ++i) target[channels[i]] = source[i];
  }
}

// The K channels of largest RMS over the tensor (ties: lower channel), ascending.
std::vector<int> choose_outlier_channels(std::int64_t tokens, int dim, const float* x, int count) {
  std::vector<double> energy(static_cast<std::size_t>(dim), 0.0);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int c = 0; c < dim; ++c) energy[static_cast<std::size_t>(c)] += static_cast<double>(x[t * dim + c]) * x[t * dim + c];
  }
  std::vector<int> order(static_cast<std::size_t>(dim));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return energy[static_cast<std::size_t>(a)] > energy[static_cast<std::size_t>(b)]; });
  order.resize(static_cast<std::size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

void TqQuantizer::check_dim(int dim) const {
  const std::string spec = options_.spec();
  if (options_.outlier_channels > 0) {
    if (options_.outlier_channels > dim - 2 || options_.outlier_channels < 2) {
      fail("quantizer spec '{}': outliers={}@{} needs 2 <= K <= head dim - 2 = {} (each group holds at least 2 "
           "channels)",
           spec, options_.outlier_channels, options_.outlier_bits, dim - 2);
    }
    for (int size : {dim - options_.outlier_channels, options_.outlier_channels}) {
      if (options_.rotation == RotationKind::hadamard && !is_power_of_two(size)) {
        fail("quantizer spec '{}': rot=hadamard needs power-of-two groups, but outliers split head dim {} into {} and "
             "{}; drop rot= to use Haar where needed",
             spec, dim, dim - options_.outlier_channels, options_.outlier_channels);
      }
    }
    return;
  }
  const int block = options_.block != 0 ? options_.block : dim;
  if (dim < 2) fail("quantizer spec '{}': head dim {} is too small (tq needs at least 2)", spec, dim);
  if (dim % block != 0) {
    fail("quantizer spec '{}': block={} does not divide the head dim {}; blocks that do: {}", spec, block, dim,
         dividing_blocks(dim));
  }
  if (options_.rotation == RotationKind::hadamard && !is_power_of_two(block)) {
    fail("quantizer spec '{}': rot=hadamard needs a power-of-two block, and the block is {}; use rot=haar or a "
         "block of {}",
         spec, block, dividing_blocks(dim));
  }
  if (block > kCodebookMaxDim) fail("quantizer spec '{}': block {} exceeds {}", spec, block, kCodebookMaxDim);
}

EncodedTensor TqQuantizer::encode(std::int64_t tokens, int dim, const float* x, const QuantContext& context) const {
  check_dim(dim);
  require_finite(tokens, dim, x, context);
  std::vector<float> work(x, x + tokens * dim);
  EncodedTensor encoded;
  encoded.tokens = tokens;
  encoded.dim = dim;

  std::vector<std::uint16_t> channel_means;
  if (options_.center == CenterMode::channel) {
    std::vector<double> sums(static_cast<std::size_t>(dim), 0.0);
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int c = 0; c < dim; ++c) sums[static_cast<std::size_t>(c)] += work[static_cast<std::size_t>(t * dim + c)];
    }
    for (int c = 0; c < dim; ++c) {
      channel_means.push_back(float_to_half(static_cast<float>(sums[static_cast<std::size_t>(c)] / static_cast<double>(std::max<std::int64_t>(tokens, 1)))));
    }
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (int c = 0; c < dim; ++c) work[static_cast<std::size_t>(t * dim + c)] -= half_to_float(channel_means[static_cast<std::size_t>(c)]);
    }
  }
  std::vector<int> outliers;
  if (options_.outlier_channels > 0) outliers = choose_outlier_channels(tokens, dim, work.data(), options_.outlier_channels);

  const TensorPlan plan = make_plan(options_, tokens, dim, outliers);
  encoded.bytes.assign(plan.total_bytes, 0);
  std::uint8_t* bytes = encoded.bytes.data();
  if (!channel_means.empty()) std::memcpy(bytes + plan.channel_means, channel_means.data(), 2 * channel_means.size());
  for (std::size_t i = 0; i < outliers.size(); ++i) {
    const auto channel = static_cast<std::uint16_t>(outliers[i]);
    std::memcpy(bytes + plan.outlier_indices + 2 * i, &channel, 2);
  }

  std::vector<float> rows;
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    const GroupPlan& group = plan.groups[g];
    const GroupCodec codec(options_, group, context);
    rows.resize(static_cast<std::size_t>(kChunkTokens * group.block));
    for (std::int64_t first = 0; first < tokens; first += kChunkTokens) {
      const std::int64_t n = std::min(kChunkTokens, tokens - first);
      for (int block = 0; block < group.blocks; ++block) {
        gather_block(plan, group, block, first, n, work.data(), rows.data());
        codec.encode_block(first, n, block, rows.data(), plan, plan.sections[g], bytes, context);
      }
    }
  }
  return encoded;
}

void TqQuantizer::decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const {
  const std::int64_t tokens = encoded.tokens;
  const int dim = encoded.dim;
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
      outliers.push_back(channel);
    }
  }
  const TensorPlan plan = make_plan(options_, tokens, dim, outliers);
  if (plan.total_bytes != encoded.bytes.size()) {
    fail("tq decode: '{}' at {} tokens x {} dims needs {} bytes, got {}", spec(), tokens, dim, plan.total_bytes,
         encoded.bytes.size());
  }
  std::vector<float> rows;
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    const GroupPlan& group = plan.groups[g];
    const GroupCodec codec(options_, group, context);
    rows.resize(static_cast<std::size_t>(kChunkTokens * group.block));
    for (std::int64_t first = 0; first < tokens; first += kChunkTokens) {
      const std::int64_t n = std::min(kChunkTokens, tokens - first);
      for (int block = 0; block < group.blocks; ++block) {
        codec.decode_block(first, n, block, plan.sections[g], bytes, rows.data());
        if (group.blocks == 1 && plan.groups.size() == 1) {
          std::memcpy(out + first * dim, rows.data(), sizeof(float) * static_cast<std::size_t>(n * dim));
        } else {
          scatter_block(plan, group, block, first, n, rows.data(), out);
        }
      }
    }
  }
  if (options_.center == CenterMode::channel) {
    for (int c = 0; c < dim; ++c) {
      std::uint16_t mean_bits;
      std::memcpy(&mean_bits, bytes + plan.channel_means + 2 * static_cast<std::size_t>(c), 2);
      const float mean = half_to_float(mean_bits);
      for (std::int64_t t = 0; t < tokens; ++t) out[t * dim + c] += mean;
    }
  }
}

std::vector<MethodInfo> turbo_methods() {
  MethodInfo info;
  info.name = "tq";
  info.summary = "TurboQuant/PolarQuant: norm + random rotation + Lloyd-Max codes per block (+ optional 1-bit QJL)";
  info.options = {
      {"b", "1..8", "bits per value of the codes (required)"},
      {"block", "2..4096", "block size B sharing one norm and rotation (default: the head dim)"},
      {"rot", "hadamard|haar|none", "rotation (default: hadamard when B is a power of two, else haar)"},
      {"cb", "beta|gauss|uniform", "codebook: exact Beta marginal, its Gaussian limit, or uniform levels (default beta)"},
      {"nc", "", "norm correction: rescale the decoded direction to unit length"},
      {"debias", "", "divide the decoded direction by alpha = E<Q(u),u> (unbiased inner products)"},
      {"qjl", "prod|extra", "1-bit QJL residual sketch: prod spends 1 of the b bits, extra adds it"},
      {"qjl_m", "1..65536", "QJL projections per block (default B)"},
      {"norm", "fp16|bf16|fp32", "stored type of norms (default fp16)"},
      {"center", "block|channel", "subtract each block's mean (fp16 per block) or each channel's mean (fp16 per head)"},
      {"outliers", "K@B2", "the K channels of largest RMS per head form a second group quantized with B2 bits"},
  };
  info.bits_formula =
      "b + (qjl=extra ? m/B : 0) + (qjl ? norm : 0)/B + norm/B + (center=block ? 16/B : 0) + (center=channel ? 16 D/T) "
      "(norm = 16 or 32 bits; T tokens per head); outliers: (K*B2 + (D-K)*b + 2 norm)/D + 16 K/(D T)";
  info.example_specs = {"tq:b=4",          "tq:b=3,block=32", "tq:b=2,rot=haar",   "tq:b=3,cb=gauss",
                        "tq:b=3,cb=uniform", "tq:b=3,nc",      "tq:b=2,debias",     "tq:b=3,qjl=prod",
                        "tq:b=1,qjl=prod", "tq:b=2,qjl=extra,qjl_m=64", "tq:b=4,norm=fp32", "tq:b=3,center=block",
                        "tq:b=3,center=channel", "tq:b=2,outliers=8@3", "tq:b=3,rot=none"};
  info.make = [](SpecOptionReader& reader) -> std::unique_ptr<Quantizer> {
    return std::make_unique<TqQuantizer>(TqOptions::parse(reader));
  };
  return {info};
}

}  // namespace tqlab
