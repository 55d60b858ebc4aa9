// The unit every per-head job works on: one (layer, sequence, head) slab of
// a dump's keys, values or queries, [token][dim] floats, and the one
// fake-quantization step (quantize -> pack -> unpack -> dequantize) that
// `tqlab roundtrip` and `tqlab sweep` share.
//
// A slab is quantized as one tensor with QuantContext{seed, role, layer
// number, head}: the random objects of a head are shared by its sequences,
// as a cache keeps one rotation per (layer, head) whatever sequence it
// serves, and a layer's result does not depend on which other layers were
// selected.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/kv_dump.h"
#include "quant/quantizer.h"

namespace tqlab {

/// One (layer, sequence, head) slab of the keys, values or queries of a dump.
struct KvSlab {
  Role role = Role::key;
  int layer_index = 0;  ///< index into KvDump::layers()
  int seq = 0;
  int head = 0;         ///< a kv head for keys and values, a q head for queries
};

/// Tokens of the slab's layer.
int slab_tokens(const KvDump& dump, const KvSlab& slab);
/// Values per vector: the key dim for keys and queries, the value dim for values.
int slab_dim(const KvDump& dump, const KvSlab& slab);
/// Heads of the slab's role in its layer (q heads for queries).
int role_heads(const KvDump& dump, int layer_index, Role role);

/// Every slab of `role` in layer `layer_index`, sequences outer, heads inner.
std::vector<KvSlab> layer_slabs(const KvDump& dump, int layer_index, Role role);

/// Reads the slab as tokens x dim floats into `out` (resized).
void read_slab(const KvDump& dump, const KvSlab& slab, std::vector<float>& out);

/// The name of the tensor the slab lies in.
std::string slab_tensor_name(const KvDump& dump, const KvSlab& slab);

/// The context the slab is quantized in: {seed, role, layer number, head}.
QuantContext slab_context(const KvDump& dump, const KvSlab& slab, std::uint64_t seed);

/// Fake-quantizes the slab's values x (tokens x dim floats, as read_slab gives
/// them) into `decoded` (same shape) and returns the packed size in bytes.
/// `decoded` may not alias x. An InputError from the quantizer (NaN/Inf in x,
/// a value its format cannot hold) is rethrown naming the file, the tensor,
/// the sequence and the head.
std::size_t fake_quantize(const KvDump& dump, const KvSlab& slab, const Quantizer& quantizer, std::uint64_t seed,
                          const float* x, float* decoded);

/// The same for `rows` vectors x (rows x dim floats) quantized as one tensor in
/// the slab's context (kv/fake_quantize.h's step, the one every path takes): some of its tokens (a sweep's window, a
/// roundtrip's piece), or others in their place. The quantizer's messages count tokens from x.
std::size_t fake_quantize_rows(const KvDump& dump, const KvSlab& slab, const Quantizer& quantizer, std::uint64_t seed,
                               std::int64_t rows, const float* x, float* decoded);

}  // namespace tqlab
