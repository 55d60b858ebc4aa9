// Byte-pair-encoding merges on a word's symbols (Sennrich et al. 2016,
// "Neural Machine Translation of Rare Words with Subword Units", section 3.2,
// as Hugging Face tokenizers applies a trained merge list):
//
//   while some adjacent pair of symbols (a, b) is in the merge list:
//     take the pair of lowest rank (its line in the list), the leftmost
//     occurrence when it occurs more than once, and replace it by the
//     symbol a+b
//
// merge_symbols does this in O(n log n) for n symbols: a doubly linked list of
// symbols and a priority queue of candidate pairs ordered by (rank, position);
// a popped candidate whose symbols have changed since it was queued is skipped.
// merge_symbols_naive rescans the whole word for every merge, O(n^2): the
// reference the fast one is tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/flat_tables.h"

namespace tqlab::tokenizer {

/// A merge of the list: rank (its position, 0 first) and the id of the merged token.
struct MergeRule {
  std::int32_t rank = 0;
  std::int32_t merged_id = 0;
};

/// The merge list as a map from a pair of token ids to its rule.
class MergeTable {
 public:
  /// Adds (or, for a pair listed again, replaces) the rule for (left, right).
  void add(std::int32_t left, std::int32_t right, MergeRule rule) { rules_.put(left, right, rule); }
  /// The rule for the pair, or nullptr.
  const MergeRule* find(std::int32_t left, std::int32_t right) const { return rules_.find(left, right); }
  std::size_t size() const { return rules_.size(); }
  void reserve(std::size_t count) { rules_.reserve(count); }

 private:
  PairTable<MergeRule> rules_;
};

/// Merges `symbols` (token ids, in order) in place until no pair has a rule.
void merge_symbols(const MergeTable& merges, std::vector<std::int32_t>& symbols);

/// The same result by rescanning after every merge: O(n^2), for tests.
void merge_symbols_naive(const MergeTable& merges, std::vector<std::int32_t>& symbols);

}  // namespace tqlab::tokenizer
