#include "kv/kv_slab.h"

#include "core/error.h"
#include "kv/fake_quantize.h"

namespace tqlab {
namespace {

const std::string& role_template(const KvDump& dump, Role role) {
  switch (role) {
    case Role::key: return dump.spec().keys;
    case Role::value: return dump.spec().values;
    case Role::query: return dump.spec().queries;
  }
  return dump.spec().keys;
}

const KvLayerShape& layer_shape(const KvDump& dump, int layer_index) {
  return dump.layers().at(static_cast<std::size_t>(layer_index));
}

}  // namespace

int slab_tokens(const KvDump& dump, const KvSlab& slab) { return layer_shape(dump, slab.layer_index).tokens; }

int slab_dim(const KvDump& dump, const KvSlab& slab) {
  const KvLayerShape& shape = layer_shape(dump, slab.layer_index);
  return slab.role == Role::value ? shape.value_dim : shape.key_dim;
}

int role_heads(const KvDump& dump, int layer_index, Role role) {
  const KvLayerShape& shape = layer_shape(dump, layer_index);
  return role == Role::query ? shape.q_heads : shape.kv_heads;
}

std::vector<KvSlab> layer_slabs(const KvDump& dump, int layer_index, Role role) {
  std::vector<KvSlab> slabs;
  const int heads = role_heads(dump, layer_index, role);
  for (int seq = 0; seq < layer_shape(dump, layer_index).seqs; ++seq) {
    for (int head = 0; head < heads; ++head) slabs.push_back({role, layer_index, seq, head});
  }
  return slabs;
}

void read_slab(const KvDump& dump, const KvSlab& slab, std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(slab_tokens(dump, slab)) * static_cast<std::size_t>(slab_dim(dump, slab)));
  switch (slab.role) {
    case Role::key: return dump.read_keys(slab.layer_index, slab.seq, slab.head, out.data());
    case Role::value: return dump.read_values(slab.layer_index, slab.seq, slab.head, out.data());
    case Role::query: return dump.read_queries(slab.layer_index, slab.seq, slab.head, out.data());
  }
}

std::string slab_tensor_name(const KvDump& dump, const KvSlab& slab) {
  return layer_tensor_name(role_template(dump, slab.role), layer_shape(dump, slab.layer_index).layer);
}

QuantContext slab_context(const KvDump& dump, const KvSlab& slab, std::uint64_t seed) {
  return QuantContext{seed, slab.role, layer_shape(dump, slab.layer_index).layer, slab.head};
}

std::size_t fake_quantize(const KvDump& dump, const KvSlab& slab, const Quantizer& quantizer, std::uint64_t seed,
                          const float* x, float* decoded) {
  return fake_quantize_rows(dump, slab, quantizer, seed, slab_tokens(dump, slab), x, decoded);
}

std::size_t fake_quantize_rows(const KvDump& dump, const KvSlab& slab, const Quantizer& quantizer, std::uint64_t seed,
                               std::int64_t rows, const float* x, float* decoded) {
  const std::string where = fmt::format("'{}': tensor '{}', sequence {}, head {}", dump.file().path(),
                                        slab_tensor_name(dump, slab), slab.seq, slab.head);
  return fake_quantize_rows(quantizer, slab_context(dump, slab, seed), rows, slab_dim(dump, slab), x, decoded, where);
}

}  // namespace tqlab
