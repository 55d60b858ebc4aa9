#include "sweep/sweep_items.h"

#include "core/index.h"

namespace tqlab {

SweepItems::SweepItems(const KvDump& dump) : dump_(&dump) {
  for (const KvLayerShape& shape : dump.layers()) {
    item_offset_.push_back(count_);
    cluster_offset_.push_back(clusters_);
    q_offset_.push_back(q_units_);
    count_ += shape.seqs * shape.kv_heads;
    clusters_ += shape.kv_heads;
    q_units_ += shape.q_heads;
  }
}

WorkItem SweepItems::item(int index) const {
  int layer_index = 0;
  while (layer_index + 1 < static_cast<int>(item_offset_.size()) && at(item_offset_, layer_index + 1) <= index) {
    ++layer_index;
  }
  const int local = index - at(item_offset_, layer_index);
  const int kv_heads = at(dump_->layers(), layer_index).kv_heads;
  return {layer_index, local / kv_heads, local % kv_heads};
}

int SweepItems::index(const WorkItem& item) const {
  const int kv_heads = at(dump_->layers(), item.layer_index).kv_heads;
  return at(item_offset_, item.layer_index) + item.seq * kv_heads + item.kv_head;
}

int SweepItems::first_of_layer(int layer_index) const { return at(item_offset_, layer_index); }

int SweepItems::layer_items(int layer_index) const {
  const KvLayerShape& shape = at(dump_->layers(), layer_index);
  return shape.seqs * shape.kv_heads;
}

int SweepItems::cluster(int layer_index, int kv_head) const { return at(cluster_offset_, layer_index) + kv_head; }

int SweepItems::q_unit(int layer_index, int q_head) const { return at(q_offset_, layer_index) + q_head; }

}  // namespace tqlab
