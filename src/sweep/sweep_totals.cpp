#include "sweep/sweep_totals.h"

#include <algorithm>

#include "core/index.h"

namespace tqlab {

SweepTotals empty_sweep_totals(const KvDump& dump, const SweepItems& items, const RunSeeds& run_seeds,
                               int synthetic_trials, bool attention, bool per_head) {
  SweepTotals totals;
  totals.items.resize(static_cast<std::size_t>(items.count()));
  totals.synthetic.resize(static_cast<std::size_t>(synthetic_trials));
  if (!attention) return totals;
  std::int64_t queries = 0;
  for (const KvLayerShape& shape : dump.layers()) queries += std::int64_t{shape.seqs} * shape.q_heads * shape.tokens;
  totals.kl_tails.resize(static_cast<std::size_t>(run_seeds.count()));
  for (KlTails& tails : totals.kl_tails) {
    tails.all.emplace(kKlTailQuantile, std::max<std::int64_t>(queries, 1));
    for (const KvLayerShape& shape : dump.layers()) {
      const std::int64_t head_queries = std::int64_t{shape.seqs} * shape.tokens;
      tails.layer.emplace_back(kKlTailQuantile, std::max<std::int64_t>(head_queries * shape.q_heads, 1));
      std::vector<UpperQuantile>& heads = tails.head.emplace_back();
      if (per_head) heads.assign(static_cast<std::size_t>(shape.q_heads), UpperQuantile(kKlTailQuantile, head_queries));
    }
  }
  return totals;
}

void add_kl_values(KlTails& tails, const WorkItem& item, int group, const std::vector<std::vector<double>>& kl) {
  UpperQuantile& layer = at(tails.layer, item.layer_index);
  std::vector<UpperQuantile>& heads = at(tails.head, item.layer_index);
  for (int g = 0; g < static_cast<int>(kl.size()); ++g) {
    for (double value : at(kl, g)) {
      tails.all->add(value);
      layer.add(value);
      if (!heads.empty()) at(heads, item.kv_head * group + g).add(value);
    }
  }
}

}  // namespace tqlab
