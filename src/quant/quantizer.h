// The quantizer interface: one (role, layer, kv head) tensor of `tokens`
// vectors of `dim` values in, bytes out, and back.
//
// A quantizer sees a whole head tensor because some schemes keep per-tensor
// side data (fp8's scale, KIVI's per-channel groups over tokens, tq's channel
// means and outlier channel list). Everything it needs to decode is in the
// bytes plus its own parameters (spec) and the context (seed, role, layer,
// head); bits per value are counted from those bytes, never from a formula.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tqlab {

/// Which tensor of attention a vector belongs to (it enters random seeds).
enum class Role : std::uint8_t { key = 0, value = 1, query = 2 };

/// Where a tensor sits; every random object's seed derives from it.
struct QuantContext {
  std::uint64_t seed = 0;  ///< the run's seed
  Role role = Role::key;
  int layer = 0;
  int kv_head = 0;
};

/// A quantized tensor: the packed bytes and the shape they decode to.
struct EncodedTensor {
  std::int64_t tokens = 0;
  int dim = 0;
  std::vector<std::uint8_t> bytes;

  /// Stored bits per value: 8 * bytes / (tokens * dim).
  double bits_per_value() const;
};

/// "key", "value", "query".
const char* role_name(Role role);

/// Throws InputError naming role, layer, head, token and channel of the first
/// NaN or Inf in x (tokens * dim floats). Every encode() calls it before any
/// other error about x: first thing, or (tq, to save a pass over x) as soon as
/// a block norm comes out non-finite, which gives the same error.
void require_finite(std::int64_t tokens, int dim, const float* x, const QuantContext& context);

class Quantizer {
 public:
  virtual ~Quantizer() = default;

  /// The canonical spec string: parse(spec()).spec() == spec().
  virtual std::string spec() const = 0;

  /// The canonical spec for vectors of `dim` values: options whose defaults
  /// depend on the head dim are dropped when they equal them (at dim 128,
  /// "tq:b=3,block=128" and "tq:b=3,rot=hadamard" are both "tq:b=3"), so one
  /// configuration has one name in results. Requires check_dim(dim) to pass.
  virtual std::string spec_for_dim(int dim) const {
    (void)dim;
    return spec();
  }

  /// Throws InputError (naming the spec and the allowed values) when this
  /// quantizer cannot handle vectors of `dim` values.
  virtual void check_dim(int dim) const { (void)dim; }

  /// Quantizes and packs x: tokens * dim floats, row-major (one vector per row).
  /// Throws InputError naming the token when x holds NaN or Inf.
  virtual EncodedTensor encode(std::int64_t tokens, int dim, const float* x,
                               const QuantContext& context) const = 0;

  /// True when each token's decoded vector depends only on that token's values
  /// and the context (no per-tensor side data such as a shared scale or channel
  /// statistics): quantizing one row alone then gives exactly the row the whole
  /// tensor's quantization gives, and the packed sizes of the tensor cut into
  /// runs of a multiple of 8 tokens add up to the whole tensor's (no per-tensor
  /// header); `tqlab roundtrip` relies on both when it takes a slab in pieces.
  /// The registry tests hold every method to it.
  virtual bool encodes_tokens_independently() const { return false; }

  /// Unpacks and dequantizes. out: encoded.tokens * encoded.dim floats.
  virtual void decode(const EncodedTensor& encoded, const QuantContext& context, float* out) const = 0;
};

}  // namespace tqlab
