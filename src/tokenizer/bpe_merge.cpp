// The two merge loops of bpe_merge.h.
#include "tokenizer/bpe_merge.h"

#include <queue>

namespace tqlab::tokenizer {
namespace {

// A symbol of the word as a node of a doubly linked list over its first positions.
struct Symbol {
  std::int32_t id;
  std::int32_t previous;  // -1 at the start
  std::int32_t next;      // -1 at the end
  bool alive;             // false once merged into the symbol on its left
};

// A pair that was adjacent when queued: the symbol at `position` and the one after it.
struct Candidate {
  std::int32_t rank;
  std::int32_t position;
  std::int32_t merged_id;
  // std::priority_queue keeps its largest element on top: "larger" is lower rank, then lower position.
  bool operator<(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : position > other.position;
  }
};

}  // namespace

void merge_symbols(const MergeTable& merges, std::vector<std::int32_t>& symbols) {
  const auto count = static_cast<std::int32_t>(symbols.size());
  if (count < 2) return;
  std::vector<Symbol> list(symbols.size());
  for (std::int32_t i = 0; i < count; ++i) list[i] = {symbols[i], i - 1, i + 1 < count ? i + 1 : -1, true};

  std::vector<Candidate> initial;
  initial.reserve(symbols.size());
  for (std::int32_t i = 0; i + 1 < count; ++i) {
    if (const MergeRule* rule = merges.find(symbols[i], symbols[i + 1]))
      initial.push_back({rule->rank, i, rule->merged_id});
  }
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(initial));

  auto queue_pair = [&](std::int32_t left) {
    const std::int32_t right = list[left].next;
    if (right < 0) return;
    if (const MergeRule* rule = merges.find(list[left].id, list[right].id))
      queue.push({rule->rank, left, rule->merged_id});
  };

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = list[top.position];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = list[left.next];
    // Stale when either symbol changed since the pair was queued: the pair now
    // there must still merge into the same token (merged ids are the
    // concatenation of the pair, so equal ids mean the same pair).
    const MergeRule* rule = merges.find(left.id, right.id);
    if (rule == nullptr || rule->merged_id != top.merged_id) continue;
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) list[right.next].previous = top.position;
    if (left.previous >= 0) queue_pair(left.previous);
    queue_pair(top.position);
  }

  std::size_t out = 0;
  for (std::int32_t i = 0; i >= 0; i = list[i].next) symbols[out++] = list[i].id;
  symbols.resize(out);
}

void merge_symbols_naive(const MergeTable& merges, std::vector<std::int32_t>& symbols) {
  for (;;) {
    std::size_t best = symbols.size();
    const MergeRule* best_rule = nullptr;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const MergeRule* rule = merges.find(symbols[i], symbols[i + 1]);
      if (rule != nullptr && (best_rule == nullptr || rule->rank < best_rule->rank)) {
        best = i;
        best_rule = rule;
      }
    }
    if (best_rule == nullptr) return;
    symbols[best] = best_rule->merged_id;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

}  // namespace tqlab::tokenizer
