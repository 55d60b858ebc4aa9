// Patterns and Split (tokenizer/text_pattern.h, pre_tokenizer.h): PCRE2 on the families' split
// regexes, stray bytes never matched, empty matches, and the five split behaviors on Hugging Face
// tokenizers' own example ("The-final--countdown", normalizer.rs tests).
#include <gtest/gtest.h>

#include "test_support.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/text_pattern.h"

namespace tqlab::tokenizer {
namespace {

using Strings = std::vector<std::string>;

Strings split(const std::string& text, const TextPattern& pattern, SplitBehavior behavior, bool invert = false) {
  Pieces out;
  split_by_pattern(text, pattern, behavior, invert, out);
  return out;
}

// The split regex of Llama 3's tokenizer.json.
const char* const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+|\s+(?!\S)|\s+)";

TEST(TextPatternTest, Llama3SplitRegex) {
  const TextPattern pattern = TextPattern::regex(kLlama3Pattern, "test");
  EXPECT_EQ(split("Hello world's 1234567 IT'S", pattern, SplitBehavior::isolated),
            (Strings{"Hello", " world", "'s", " ", "123", "456", "7", " IT", "'S"}));
  EXPECT_EQ(split("a  b\n\n  c", pattern, SplitBehavior::isolated), (Strings{"a", " ", " b", "\n\n", " ", " c"}));
  EXPECT_EQ(split("\u65e5\u672c\u8a9e!!", pattern, SplitBehavior::isolated), (Strings{"\u65e5\u672c\u8a9e", "!!"}));
}

TEST(TextPatternTest, StrayBytesAreNeverMatchedAndStandAlone) {
  const TextPattern pattern = TextPattern::regex(kLlama3Pattern, "test");
  // "ab\xffcd": the letters around the stray byte are matched apart; the byte is a piece of its own,
  // and so is each byte of a run of them.
  EXPECT_EQ(split("ab\xff" "cd", pattern, SplitBehavior::isolated), (Strings{"ab", "\xff", "cd"}));
  EXPECT_EQ(split("x\xed\xa0\x80y", pattern, SplitBehavior::isolated), (Strings{"x", "\xed", "\xa0", "\x80", "y"}));
  std::vector<TextMatch> matches;
  pattern.find_all("\xff\xfe", matches);
  EXPECT_TRUE(matches.empty());
}

TEST(TextPatternTest, EmptyMatchesCutBetweenCharacters) {
  const TextPattern pattern = TextPattern::regex("x*", "test");
  std::vector<TextMatch> matches;
  pattern.find_all("axxb", matches);
  // Oniguruma's loop: "" at 0, "xx" at 1, no "" right after it, "" at the end.
  ASSERT_EQ(matches.size(), 3u);
  EXPECT_EQ(matches[0].begin, 0u);
  EXPECT_EQ(matches[0].end, 0u);
  EXPECT_EQ(matches[1].begin, 1u);
  EXPECT_EQ(matches[1].end, 3u);
  EXPECT_EQ(matches[2].begin, 4u);
  EXPECT_EQ(split("axxb", pattern, SplitBehavior::isolated), (Strings{"a", "xx", "b"}));
}

TEST(TextPatternTest, BehaviorsOnHuggingFacesExample) {
  const TextPattern dash = TextPattern::literal("-", "test");
  const std::string text = "The-final--countdown";
  EXPECT_EQ(split(text, dash, SplitBehavior::removed), (Strings{"The", "final", "countdown"}));
  EXPECT_EQ(split(text, dash, SplitBehavior::isolated), (Strings{"The", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(text, dash, SplitBehavior::merged_with_previous), (Strings{"The-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(text, dash, SplitBehavior::merged_with_next), (Strings{"The", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(text, dash, SplitBehavior::contiguous), (Strings{"The", "-", "final", "--", "countdown"}));
  // invert: the text between dashes is what gets removed, each dash stays a piece.
  EXPECT_EQ(split(text, dash, SplitBehavior::removed, true), (Strings{"-", "-", "-"}));
}

TEST(TextPatternTest, ReplaceAll) {
  EXPECT_EQ(TextPattern::literal(" ", "test").replace_all(" a  b ", "\u2581"), "\u2581a\u2581\u2581b\u2581");
  EXPECT_EQ(TextPattern::regex("[0-9]+", "test").replace_all("a12b3", "#"), "a#b#");
}

TEST(TextPatternTest, BadPatternsNameWhere) {
  const std::string message = testing::input_error_message(
      [] { TextPattern::regex("(unclosed", "tokenizer 'x.json': pre_tokenizer.pattern"); });
  EXPECT_NE(message.find("tokenizer 'x.json': pre_tokenizer.pattern"), std::string::npos) << message;
  EXPECT_NE(message.find("(unclosed"), std::string::npos) << message;
  EXPECT_NE(testing::input_error_message([] { TextPattern::literal("", "where"); }).find("empty"), std::string::npos);
}

}  // namespace
}  // namespace tqlab::tokenizer
