// A sweep's work, numbered once: work items, clusters and (run, seed) pairs.
//
// Work item: one (layer, sequence, kv head) slab of the dump, with the q heads
// of its group. Items are numbered layer index first, then sequence, then kv
// head — the order the runner reduces them in and the order every total is
// added in, so that a document does not depend on where or when an item was
// computed. Clusters (the units of a standard error) are (layer, kv head)
// for reconstruction and needle sums and (layer, q head) for attention sums,
// numbered layer first. A (run, seed) pair is run * seeds + seed index.
#pragma once

#include <vector>

#include "kv/kv_dump.h"

namespace tqlab {

struct WorkItem {
  int layer_index = 0;  ///< into KvDump::layers()
  int seq = 0;
  int kv_head = 0;
};

class SweepItems {
 public:
  explicit SweepItems(const KvDump& dump);
  /// No items: a sweep without a dump (a model block measuring end to end only).
  SweepItems() = default;

  /// Items of every layer.
  int count() const { return count_; }
  WorkItem item(int index) const;
  int index(const WorkItem& item) const;
  /// The items of layer `layer_index` are [first_of_layer, first_of_layer + layer_items).
  int first_of_layer(int layer_index) const;
  int layer_items(int layer_index) const;

  /// (layer, kv head) clusters and (layer, q head) units.
  int clusters() const { return clusters_; }
  int cluster(int layer_index, int kv_head) const;
  int q_units() const { return q_units_; }
  int q_unit(int layer_index, int q_head) const;

 private:
  const KvDump* dump_ = nullptr;
  std::vector<int> item_offset_, cluster_offset_, q_offset_;  // per layer index
  int count_ = 0, clusters_ = 0, q_units_ = 0;
};

/// The (run, seed) pairs of a sweep: runs outer, seeds inner.
struct RunSeeds {
  int runs = 0;
  int seeds = 1;

  int count() const { return runs * seeds; }
  int index(int run, int seed_index) const { return run * seeds + seed_index; }
  int run_of(int run_seed) const { return run_seed / seeds; }
  int seed_index_of(int run_seed) const { return run_seed % seeds; }
};

}  // namespace tqlab
