// BPE merging (tokenizer/bpe_merge.h): a hand-worked example, and the O(n log n) priority-queue
// merge against the naive rescanning one on random vocabularies and words.
#include <random>
#include <string>
#include <unordered_map>

#include <gtest/gtest.h>

#include "tokenizer/bpe_merge.h"

namespace tqlab::tokenizer {
namespace {

// A vocabulary of strings with merges added in rank order; merged ids are the concatenation's.
struct Vocabulary {
  std::vector<std::string> tokens;
  std::unordered_map<std::string, std::int32_t> ids;
  MergeTable merges;
  std::int32_t next_rank = 0;

  std::int32_t id(const std::string& token) {
    const auto [it, added] = ids.emplace(token, static_cast<std::int32_t>(tokens.size()));
    if (added) tokens.push_back(token);
    return it->second;
  }
  void merge(const std::string& left, const std::string& right) {
    merges.add(id(left), id(right), {next_rank++, id(left + right)});
  }
  std::vector<std::int32_t> symbols(const std::string& word) {
    std::vector<std::int32_t> out;
    for (const char c : word) out.push_back(id(std::string(1, c)));
    return out;
  }
  std::vector<std::string> strings(const std::vector<std::int32_t>& symbols) const {
    std::vector<std::string> out;
    for (const std::int32_t s : symbols) out.push_back(tokens[s]);
    return out;
  }
};

using Strings = std::vector<std::string>;

TEST(BpeMergeTest, HandWorkedExample) {
  Vocabulary v;
  v.merge("b", "c");    // rank 0
  v.merge("a", "b");    // rank 1
  v.merge("a", "bc");   // rank 2
  v.merge("abc", "d");  // rank 3
  // a b c a b c d: (b,c) has the lowest rank: both become bc -> a bc a bc d; (a,bc) twice ->
  // abc abc d; (abc,d) -> abc abcd. (a,b) never fires: rank 0 took the b's first.
  std::vector<std::int32_t> word = v.symbols("abcabcd");
  merge_symbols(v.merges, word);
  EXPECT_EQ(v.strings(word), (Strings{"abc", "abcd"}));
  // "ab" alone: (a,b) is all there is.
  word = v.symbols("abab");
  merge_symbols(v.merges, word);
  EXPECT_EQ(v.strings(word), (Strings{"ab", "ab"}));
}

TEST(BpeMergeTest, EqualRanksMergeLeftmostFirst) {
  Vocabulary v;
  v.merge("a", "a");
  // a a a: the pair at 0 goes first, leaving the third a alone; a a a a -> aa aa.
  std::vector<std::int32_t> word = v.symbols("aaa");
  merge_symbols(v.merges, word);
  EXPECT_EQ(v.strings(word), (Strings{"aa", "a"}));
  word = v.symbols("aaaaa");
  merge_symbols(v.merges, word);
  EXPECT_EQ(v.strings(word), (Strings{"aa", "aa", "a"}));
  v.merge("aa", "aa");
  word = v.symbols("aaaaaaaa");
  merge_symbols(v.merges, word);
  EXPECT_EQ(v.strings(word), (Strings{"aaaa", "aaaa"}));
}

TEST(BpeMergeTest, PairListedAgainTakesItsLaterRank) {
  Vocabulary v;
  v.merge("a", "b");  // rank 0, replaced below by rank 2
  v.merge("b", "c");  // rank 1
  v.merge("a", "b");  // rank 2
  std::vector<std::int32_t> word = v.symbols("abc");
  merge_symbols(v.merges, word);
  EXPECT_EQ(v.strings(word), (Strings{"a", "bc"}));
}

TEST(BpeMergeTest, ShortAndUnmergeableWords) {
  Vocabulary v;
  v.merge("a", "b");
  std::vector<std::int32_t> word;
  merge_symbols(v.merges, word);
  EXPECT_TRUE(word.empty());
  word = v.symbols("a");
  merge_symbols(v.merges, word);
  EXPECT_EQ(v.strings(word), (Strings{"a"}));
  word = v.symbols("ba");
  merge_symbols(v.merges, word);
  EXPECT_EQ(v.strings(word), (Strings{"b", "a"}));
}

// Random merge lists over a small alphabet (so that merges interact a lot) and random words,
// some long: the fast merge must give exactly the naive one's symbols.
TEST(BpeMergeTest, PriorityQueueMatchesNaiveMergeOnRandomInputs) {
  std::mt19937_64 rng(20);
  for (int trial = 0; trial < 40; ++trial) {
    Vocabulary v;
    const std::string alphabet = trial % 2 == 0 ? "ab" : "abcde";
    for (const char c : alphabet) v.id(std::string(1, c));
    const int merge_count = 5 + static_cast<int>(rng() % 200);
    for (int m = 0; m < merge_count; ++m) {
      const std::string& left = v.tokens[rng() % v.tokens.size()];
      const std::string& right = v.tokens[rng() % v.tokens.size()];
      if (left.size() + right.size() <= 12) v.merge(std::string(left), std::string(right));
    }
    for (int w = 0; w < 60; ++w) {
      const std::size_t length = w < 57 ? rng() % 40 : 300 + rng() % 1700;
      std::string word;
      for (std::size_t i = 0; i < length; ++i) word += alphabet[rng() % alphabet.size()];
      std::vector<std::int32_t> fast = v.symbols(word);
      std::vector<std::int32_t> naive = fast;
      merge_symbols(v.merges, fast);
      merge_symbols_naive(v.merges, naive);
      ASSERT_EQ(v.strings(fast), v.strings(naive)) << "trial " << trial << " word " << word;
    }
  }
}

}  // namespace
}  // namespace tqlab::tokenizer
